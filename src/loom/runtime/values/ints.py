"""The range of an `int`, and the check generated code makes where an int leaves the domain.

An `int` is a 64-bit integer: a BIGINT column, `Int64` on the wire. Arithmetic on ints is Python's,
exact and never wrapped, so a value in the middle of an expression may be larger (`a * b / c` is
right whenever its result fits). A value that leaves the domain must fit: `fit` refuses one that
does not with `ArithmeticRefused` (422), naming where it was going (a field, a derived value, the
result of a handler, an event), so that nothing is saved or answered that could not be read back.
"""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar
from uuid import UUID

from loom.runtime.values.decimals import ArithmeticRefused

__all__ = ["INT64_MAX", "INT64_MIN", "all_fit", "beyond", "fit"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

RANGE = f"an int is 64 bits, from {INT64_MIN} to {INT64_MAX}"

T = TypeVar("T")

# Past this many bits a number is not spelled out: str() of a huge int is slow, and past 4300
# digits Python refuses it altogether.
_SPELLED_BITS = 256


def beyond(value: Any, path: str = "") -> tuple[str, int] | None:
    """The first int in `value` (itself, an element of a list, a field of a value object or event,
    all the way down) outside the range of an `int`, with its path from `value` (`""`, `[2]`,
    `.amount`); None when every int in it fits."""
    found = _beyond(value)
    return None if found is None else (path + found[0], found[1])


def _beyond(value: Any) -> tuple[str, int] | None:
    # the path is spelled only on the way back from an int that does not fit
    kind = type(value)
    if kind is int:
        return None if INT64_MIN <= value <= INT64_MAX else ("", value)
    if kind is list or kind is tuple:
        for i, item in enumerate(value):
            found = _beyond(item)
            if found is not None:
                return f"[{i}]{found[0]}", found[1]
        return None
    names = _FIELDS.get(kind)
    if names is None:
        names = _FIELDS[kind] = _field_names(kind)
    for name in names:
        found = _beyond(getattr(value, name))
        if found is not None:
            return f".{name}{found[0]}", found[1]
    return None


def all_fit(value: Any) -> bool:
    """Whether every int in `value` fits: `beyond(value) is None`, answered without a call per
    field for a dataclass whose fields are ints, strings, ids and other leaves (an event, checked
    at every emit)."""
    names = _FIELDS.get(type(value))
    if names is None:
        return _beyond(value) is None
    for name in names:
        field = getattr(value, name)
        kind = type(field)
        if kind is int:
            if not INT64_MIN <= field <= INT64_MAX:
                return False
        elif kind not in _LEAVES and _beyond(field) is not None:
            return False
    return True


# types that hold no int (`_beyond` would find none in them), so `all_fit` steps over them
_LEAVES = frozenset({str, bool, float, Decimal, UUID, datetime, date, timedelta, type(None)})

# type -> the fields of its instances when it is a dataclass (an event, a value object), else ():
# read once per type, not per value (an event is checked at every emit)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _field_names(kind: type) -> tuple[str, ...]:
    if not dataclasses.is_dataclass(kind):
        return ()
    return tuple(f.name for f in dataclasses.fields(kind))


def fit(value: T, what: str) -> T:
    """`value` itself when every int in it fits 64 bits; else ArithmeticRefused saying that `what`
    (`Counter.count`, `derived Ev.twice`, `the result of queryHandler Sum`) would not."""
    found = beyond(value)
    if found is None:
        return value
    path, number = found
    if number.bit_length() <= _SPELLED_BITS:
        said = str(number)
    else:
        said = f"a {'negative ' if number < 0 else ''}number of more than {_SPELLED_BITS} bits"
    raise ArithmeticRefused(f"{what}{path} would be {said}, which does not fit: {RANGE}")
