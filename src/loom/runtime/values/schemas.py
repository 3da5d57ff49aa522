"""Wire models and constrained scalars shared by generated schemas."""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from annotated_types import Interval
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ModelWrapValidatorHandler,
    PlainSerializer,
    Strict,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from loom.runtime.values import decimals
from loom.runtime.values.ints import INT64_MAX, INT64_MIN
from loom.runtime.values.text import text_error

T = TypeVar("T")
U = TypeVar("U")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# an int as text: ASCII digits, an optional minus; longer than this is out of range whatever
# its digits (and spares int() a long string)
_DIGITS = re.compile(r"-?[0-9]{1,64}")
_ANY_DIGITS = re.compile(r"-?[0-9]+")


def _text_int(value: Any) -> Any:
    # Python's int(), which pydantic's lax mode follows, also reads `1.0`, `1_000`, ` 1`, `+1` and
    # the digits of other scripts: none of them is the integer a client wrote in digits
    if not isinstance(value, str):
        return value
    if _DIGITS.fullmatch(value):
        return int(value)
    if _ANY_DIGITS.fullmatch(value):
        raise PydanticCustomError("int_range", "Input should be a 64-bit integer")
    raise PydanticCustomError(
        "int_parsing", "Input should be an integer written in digits (an optional leading -)"
    )


def _text_bool(value: Any) -> Any:
    # not pydantic's lax `yes`, `on`, `1`, `t`, `True`: a bool is written `true` or `false`
    if not isinstance(value, str):
        return value
    if value == "true":
        return True
    if value == "false":
        return False
    raise PydanticCustomError("bool_parsing", "Input should be `true` or `false`")


Int64 = Annotated[int, Interval(ge=INT64_MIN, le=INT64_MAX)]
"""An integer that fits a BIGINT column; larger values are a 422, not a database error."""
JsonInt64 = Annotated[int, Strict(), Interval(ge=INT64_MIN, le=INT64_MAX)]
"""An `int` in a JSON body: a JSON integer only (not `true`, `"1"`, `1.0` or `1e3`). Query
parameters arrive as text and take `QueryInt64`."""
JsonBool = Annotated[bool, Strict()]
"""A `bool` in a JSON body: `true` or `false` only (not `1`, `"true"` or `"yes"`)."""
QueryInt64 = Annotated[int, BeforeValidator(_text_int), Interval(ge=INT64_MIN, le=INT64_MAX)]
"""An `int` in a query string: digits with an optional leading `-` only (not `1.0`, `1_000`,
`+1`, ` 1` or `١`), within 64 bits."""
QueryBool = Annotated[bool, BeforeValidator(_text_bool)]
"""A `bool` in a query string: `true` or `false` only (not `1`, `yes`, `on` or `True`)."""
Int32 = Annotated[int, Interval(ge=INT32_MIN, le=INT32_MAX)]
"""An integer that fits an INTEGER column."""
PageLimit = Annotated[int, BeforeValidator(_text_int), Interval(ge=1, le=500)]
"""`?limit=`: 1..500, in digits."""
PageOffset = Annotated[int, BeforeValidator(_text_int), Interval(ge=0, le=INT64_MAX)]
"""`?offset=`: 0..2**63-1, in digits."""


def _wire_decimal(value: Any) -> Decimal:
    try:
        return decimals.parse(value)
    except ValueError as exc:
        raise PydanticCustomError("decimal_invalid", str(exc)) from None


def _wire_text(value: str) -> str:
    problem = text_error(value)
    if problem is not None:
        raise PydanticCustomError("string_invalid", problem)
    return value


WireDecimal = Annotated[Decimal, BeforeValidator(_wire_decimal)]
"""A `decimal` on input: a JSON number (read exactly) or a string of digits, within the bounds of
`loom.runtime.decimals`; never a bool, NaN or Infinity."""
DecimalOut = Annotated[
    Decimal, PlainSerializer(lambda value: format(value, "f"), return_type=str, when_used="json")
]
"""A `decimal` on output: a JSON string in positional notation (`"0.00000001"`, never `"1E-8"`)."""
TEXT_CHECK = AfterValidator(_wire_text)
"""The check of every `string` on input: no NUL, no lone surrogate (see `values.text`). A `string(N)` is
`Annotated[str, MaxLen(N), TEXT_CHECK]` (the length first, so its message speaks of characters)."""
WireText = Annotated[str, TEXT_CHECK]
"""A `string` on input."""


class Page(BaseModel, Generic[T]):
    """One page of a list: `{"items": [...], "limit": n, "offset": n, "total": n}`."""

    items: list[T]
    limit: int
    offset: int
    total: int

    def map(self, fn: Callable[[Any], U]) -> Page[U]:
        """The same page with `fn` applied to every item (no validation)."""
        return Page.model_construct(
            items=[fn(x) for x in self.items],
            limit=self.limit,
            offset=self.offset,
            total=self.total,
        )


class PatchInput(BaseModel):
    """The base of a crudish body that names fields it refuses: an update body
    (`TicketUpdateInput`: the fields neither `immutable` nor `readOnly`, each optional), or a create
    body leaving out `readOnly` fields. A member naming an immutable field (listed in `immutable`,
    by model name) or a read-only one (`read_only`) is refused as such, rather than as an unknown
    member."""

    model_config = ConfigDict(extra="forbid")
    immutable: ClassVar[tuple[str, ...]] = ()
    read_only: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="wrap")
    @classmethod
    def _refuse_immutable(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            errors = exc.errors()
            if not any(cls._refused(e["type"], e["loc"]) for e in errors):
                raise
            # rebuilt whole, so the other errors of the body are still all reported; a message
            # without context is taken as it is (its braces are not placeholders)
            lines: list[Any] = [
                {
                    "type": cls._refused(e["type"], e["loc"])
                    or PydanticCustomError(e["type"], e["msg"]),
                    "loc": e["loc"],
                    "input": e["input"],
                }
                for e in errors
            ]
            raise ValidationError.from_exception_data(exc.title, lines) from None

    @classmethod
    def _refused(cls, kind: str, loc: tuple[int | str, ...]) -> PydanticCustomError | None:
        """The error of a member naming a field this body refuses, or None."""
        if kind != "extra_forbidden" or len(loc) != 1:
            return None
        if loc[0] in cls.immutable:
            message = "{field} is immutable: it is set at create only, never updated"
            return PydanticCustomError("immutable_field", message, {"field": loc[0]})
        if loc[0] in cls.read_only:
            message = "{field} is read-only: only the aggregate's own operations change it"
            return PydanticCustomError("read_only_field", message, {"field": loc[0]})
        return None


class ProblemError(BaseModel):
    path: str
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details, with the Loom extension members."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str
    aggregate: str | None = None
    rule: str | None = None
    errors: list[ProblemError] | None = None
