"""Type relations of the checker. Types are the IR's own type values, plus ERROR for an expression
that already has a diagnostic (it fits everywhere, so one mistake produces one message).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TypeGuard

from loom.model import ir


@dataclass(frozen=True, slots=True)
class ErrorType:
    pass


ERROR = ErrorType()
AnyType = ir.Type | ErrorType

NUMERIC = (ir.INT, ir.DECIMAL)
ORDERED = (ir.INT, ir.DECIMAL, ir.STRING, ir.DATETIME, ir.DATE, ir.DURATION)


# The checker words a possible mismatch before it knows whether there is one, so these two are
# asked some 30,000 times at 1,000 aggregates, about a handful of distinct types: kept.
@functools.cache
def show(t: AnyType) -> str:
    match t:
        case ir.PrimitiveType(name):
            return name
        case ir.IdType(agg, _):
            return f"{agg} id"
        case ir.EnumType(name, _) | ir.AggregateType(name, _) | ir.EventType(name, _):
            return name
        case ir.ValueType(name, _) | ir.PayloadType(name, _, _):
            return name
        case ir.ListType(el):
            return f"{show(el)}[]"
        case ir.OptionalType(inner):
            return f"{show(inner)}?"
        case ir.VoidType():
            return "nothing"
    return "?"


@functools.cache
def a(t: AnyType | str) -> str:
    """`an `int``, `a `string``: the article that reads right before a quoted type."""
    name = t if isinstance(t, str) else show(t)
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} `{name}`"


def is_error(t: AnyType) -> bool:
    return isinstance(t, ErrorType)


def is_numeric(t: AnyType) -> bool:
    return t in NUMERIC


def assignable(value: AnyType, target: AnyType) -> bool:
    """May a value of type `value` be stored where `target` is expected?"""
    if is_error(value) or is_error(target) or value == target:
        return True
    if value == ir.INT and target == ir.DECIMAL:
        return True  # int widens to decimal; never the reverse
    if isinstance(target, ir.OptionalType):
        inner = value.inner if isinstance(value, ir.OptionalType) else value
        return assignable(inner, target.inner)
    if isinstance(target, ir.ListType) and isinstance(value, ir.ListType):
        return value.element == target.element or (
            value.element == ir.INT and target.element == ir.DECIMAL
        )
    return False


def strip_optional(t: AnyType) -> AnyType:
    return t.inner if isinstance(t, ir.OptionalType) else t


def comparable(a: AnyType, b: AnyType) -> bool:
    """`==`/`!=`: one type on both sides, allowing int/decimal and `T` against `T?`."""
    if is_error(a) or is_error(b):
        return True
    a, b = strip_optional(a), strip_optional(b)
    return a == b or (is_numeric(a) and is_numeric(b))


def ordered(a: AnyType, b: AnyType) -> bool:
    """`<` and friends: numbers with numbers, otherwise two values of the same ordered type."""
    if is_error(a) or is_error(b):
        return True
    if is_numeric(a) and is_numeric(b):
        return True
    return a == b and a in ORDERED


def join(a: AnyType, b: AnyType) -> AnyType | None:
    """The type of `c ? a : b`, or None when the branches do not agree."""
    if is_error(a):
        return b
    if is_error(b) or a == b:
        return a
    if is_numeric(a) and is_numeric(b):
        return ir.DECIMAL
    if assignable(a, b):
        return b
    if assignable(b, a):
        return a
    return None


def bare(t: AnyType) -> AnyType:
    """`T` of `T`, `T?`, `T[]` and `T[]?`."""
    while isinstance(t, (ir.OptionalType, ir.ListType)):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    return t


def is_record(t: AnyType) -> TypeGuard[ir.ValueType | ir.PayloadType]:
    """A value object or a payload (a record with fields, built by `Name { … }`)."""
    return isinstance(t, (ir.ValueType, ir.PayloadType))


def storable(t: AnyType) -> bool:
    """Can a field, parameter or event field have this type (no aggregate or event values)?"""
    match t:
        case ir.AggregateType() | ir.EventType() | ir.VoidType():
            return False
        case ir.ListType(el) | ir.OptionalType(el):
            return storable(el)
    return True
