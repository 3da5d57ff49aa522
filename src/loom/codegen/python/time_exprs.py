"""Time in generated code: duration, date and datetime literals, the time functions, and the
arithmetic on times, which goes through `loom.runtime.times` (`times.date_plus(d, 1d)`) so that a date
moved by a part of a day, or a result outside the calendar, is a 422 wherever the code runs."""

from __future__ import annotations

from datetime import date, datetime

from loom.codegen.python.imports import Imports
from loom.model import ir, time

_FUNCTIONS: dict[ir.TimeFunction, str] = {
    "today": "today",
    "seconds": "seconds",
    "minutes": "minutes",
    "hours": "hours",
    "days": "days",
    "dateOf": "date_of",
    "startOf": "start_of",
}
_UNITS = (
    ("days", 86_400_000_000),
    ("hours", 3_600_000_000),
    ("minutes", 60_000_000),
    ("seconds", 1_000_000),
    ("milliseconds", 1_000),
)


def timedelta_text(micros: int) -> str:
    """`timedelta(minutes=15)`: a duration in its largest whole unit (the caller imports
    `timedelta`)."""
    if micros == 0:
        return "timedelta(0)"
    for unit, size in _UNITS:
        if micros % size == 0:
            return f"timedelta({unit}={micros // size})"
    return f"timedelta(microseconds={micros})"


def literal(expr: ir.Literal_, imports: Imports) -> str | None:
    """A duration, date or datetime literal (None: another literal)."""
    if expr.type == ir.DURATION and isinstance(expr.value, int):
        imports.add("datetime", "timedelta")
        return timedelta_text(expr.value)
    if expr.type == ir.DATE and isinstance(expr.value, str):
        imports.add("datetime", "date")
        d = date.fromisoformat(expr.value)
        return f"date({d.year}, {d.month}, {d.day})"
    if expr.type == ir.DATETIME and isinstance(expr.value, str):
        imports.add("datetime", "UTC", "datetime")
        t = datetime.fromisoformat(expr.value)
        parts = [t.year, t.month, t.day, t.hour, t.minute, t.second]
        if t.microsecond:
            parts.append(t.microsecond)
        return f"datetime({', '.join(map(str, parts))}, tzinfo=UTC)"
    return None


def call(expr: ir.TimeCall, args: list[str], imports: Imports) -> str:
    imports.add("loom.runtime", "times")
    return f"times.{_FUNCTIONS[expr.function]}({', '.join(args)})"


def arithmetic(expr: ir.Binary, left: str, right: str, imports: Imports) -> str | None:
    """`times.datetime_plus(t, d)` for arithmetic on times (None: not on times). `t1 - t2` of
    datetimes stays Python's (it cannot overflow)."""
    left_t, right_t = expr.left.type, expr.right.type
    if not isinstance(left_t, ir.PrimitiveType) or not isinstance(right_t, ir.PrimitiveType):
        return None
    _, fn, swap = time.ARITHMETIC.get((left_t.name, expr.op, right_t.name), ("", None, False))
    if fn is None:
        return None
    imports.add("loom.runtime", "times")
    return f"times.{fn}({right}, {left})" if swap else f"times.{fn}({left}, {right})"
