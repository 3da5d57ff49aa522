"""Wire models and constrained scalars shared by generated schemas."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

from annotated_types import Interval
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    Strict,
)
from pydantic_core import PydanticCustomError

from . import decimals
from ._text import text_error
from .ints import INT64_MAX, INT64_MIN

T = TypeVar("T")
U = TypeVar("U")

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Int64 = Annotated[int, Interval(ge=INT64_MIN, le=INT64_MAX)]
"""An integer that fits a BIGINT column; larger values are a 422, not a database error."""
JsonInt64 = Annotated[int, Strict(), Interval(ge=INT64_MIN, le=INT64_MAX)]
"""An `int` in a JSON body: a JSON integer only (not `true`, `"1"`, `1.0` or `1e3`). Query and path
parameters arrive as text and take `Int64`."""
JsonBool = Annotated[bool, Strict()]
"""A `bool` in a JSON body: `true` or `false` only (not `1`, `"true"` or `"yes"`)."""
Int32 = Annotated[int, Interval(ge=INT32_MIN, le=INT32_MAX)]
"""An integer that fits an INTEGER column."""
PageLimit = Annotated[int, Interval(ge=1, le=500)]
"""`?limit=`: 1..500."""
PageOffset = Annotated[int, Interval(ge=0, le=INT64_MAX)]
"""`?offset=`: 0..2**63-1."""


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
"""The check of every `string` on input: no NUL, no lone surrogate (see `_text`). A `string(N)` is
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
