"""The types of the model's values, and the bounds of their arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

Primitive: TypeAlias = Literal["string", "int", "decimal", "bool", "datetime", "date", "duration"]


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """`max_length` is N of a `string(N)`: a bound on the values a field or parameter takes, checked
    where they enter (the wire, a save, an aggregate's or value object's invariants). It is not part
    of the type's identity (`string(10) == string`), so any string may be assigned to it and type
    rules stay those of `string`."""

    name: Primitive
    max_length: int | None = field(default=None, compare=False)
    # `decimal(P, S)`: like `max_length`, a bound checked where values enter, not part of the type
    # (see docs/language.md "Decimals"; `loom.lang.check.scales` tracks the scale of expressions)
    precision: int | None = field(default=None, compare=False)
    scale: int | None = field(default=None, compare=False)


MAX_STRING_LENGTH = 10_485_760
"""The largest N of `string(N)`: PostgreSQL's VARCHAR limit."""


MAX_DECIMAL_PRECISION = 100
"""The largest P of `decimal(P, S)`: 50 digits before the point and 50 after it, the bounds of
every `decimal` (`loom.runtime.decimals`, which the model does not import)."""


MAX_DECIMAL_SCALE = 50


ROUNDING_MODES = ("halfEven", "halfUp", "down", "up")
"""The modes of `round(x, S, mode)`, the default first; `loom.runtime.decimals.ROUNDING_MODES` maps
each to its rounding (tests/runtime/test_rounding.py checks the two agree)."""


@dataclass(frozen=True, slots=True)
class IdType:
    """`Customer id`: the identity of an aggregate (a UUID on every back end)."""

    aggregate: str
    context: str


@dataclass(frozen=True, slots=True)
class EnumType:
    name: str
    context: str


@dataclass(frozen=True, slots=True)
class ListType:
    element: Type


@dataclass(frozen=True, slots=True)
class OptionalType:
    inner: Type


@dataclass(frozen=True, slots=True)
class AggregateType:
    """The type of a local bound to a loaded or created aggregate (never a field type)."""

    name: str
    context: str


@dataclass(frozen=True, slots=True)
class EventType:
    """The type of an event value (a create parameter typed by an event, in later issues)."""

    name: str
    context: str


@dataclass(frozen=True, slots=True)
class VoidType:
    """The type of a call statement with no value (an operation call)."""


@dataclass(frozen=True, slots=True)
class ValueType:
    """A value object (`value Money { … }`): an immutable record compared by its fields, usable
    wherever a field or parameter type goes."""

    name: str
    context: str


@dataclass(frozen=True, slots=True)
class PayloadType:
    """A payload (`command` / `query` / `response` / `error`): a transport record, only a workflow
    `create` parameter or part of a command / query handler contract."""

    name: str
    context: str
    kind: Literal["command", "query", "response", "error"]


Type: TypeAlias = (
    PrimitiveType
    | IdType
    | EnumType
    | ListType
    | OptionalType
    | AggregateType
    | EventType
    | VoidType
    | ValueType
    | PayloadType
)


STRING = PrimitiveType("string")


INT = PrimitiveType("int")


DECIMAL = PrimitiveType("decimal")


BOOL = PrimitiveType("bool")


DATETIME = PrimitiveType("datetime")


DATE = PrimitiveType("date")


DURATION = PrimitiveType("duration")


VOID = VoidType()
