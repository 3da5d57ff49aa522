"""The built-in functions generated code calls (`model.builtins`, docs/language.md, "Built-in
functions"): calendar arithmetic, a duration as a number, the parts of a date, and strings.

- `add_months(d, n)` / `add_years(d, n)` move a date (or a datetime, keeping its time of day) by
  calendar months, clamped to the end of the month: 2027-01-31 plus one month is 2027-02-28, and
  2028-02-29 plus one year is 2029-02-28. A result outside years 1 to 9999 is a 422
  (`TimeRefused`).
- `in_days(d)` … `in_seconds(d)`: the whole units in a duration, truncated toward zero
  (`in_days(-36h)` is -1), so an `int` never holds a fraction silently rounded away from zero.
- `sum_ints` / `sum_decimals` / `sum_durations` (`sum(xs)`): 0 (or a zero duration) for an empty
  list; decimals add exactly as `+` does (`decimals.add`, a 422 beyond its bounds), durations
  beyond `timedelta`'s range are a 422 (`TimeRefused`).
- `trim(s)` removes `WHITESPACE` at both ends; a criterion's SQL removes the same characters
  (`loom.runtime.storage.criteria`).
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence, Sized
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Final, TypeVar

from loom.runtime.values import decimals
from loom.runtime.values.times import TimeRefused

__all__ = [
    "WHITESPACE",
    "add_months",
    "add_years",
    "contains",
    "count",
    "day",
    "in_days",
    "in_hours",
    "in_minutes",
    "in_seconds",
    "is_present",
    "length",
    "lower",
    "month",
    "starts_with",
    "sum_decimals",
    "sum_durations",
    "sum_ints",
    "trim",
    "upper",
    "year",
]

WHITESPACE: Final = " \t\n\r"
"""What `trim` removes: the characters SQL's `trim` can be told to remove on both engines."""

_T = TypeVar("_T", date, datetime)


def add_months(at: _T, n: int) -> _T:
    """`addMonths(d, n)`: `at` moved by `n` calendar months (n may be negative), its day clamped
    to the last day of the month reached."""
    months = at.year * 12 + at.month - 1 + n
    year, month = divmod(months, 12)
    if not 1 <= year <= 9999:
        raise TimeRefused("the result is outside the calendar (years 1 to 9999)")
    last = calendar.monthrange(year, month + 1)[1]
    return at.replace(year=year, month=month + 1, day=min(at.day, last))


def add_years(at: _T, n: int) -> _T:
    """`addYears(d, n)`: `n` times twelve months (29 February becomes 28 February in a common
    year)."""
    if abs(n) > 10_000:  # beyond any calendar date; n * 12 stays small
        raise TimeRefused("the result is outside the calendar (years 1 to 9999)")
    return add_months(at, n * 12)


def _whole(span: timedelta, unit: timedelta) -> int:
    micros = span // timedelta(microseconds=1)
    size = unit // timedelta(microseconds=1)
    whole = abs(micros) // size
    return -whole if micros < 0 else whole


def in_days(span: timedelta) -> int:
    return _whole(span, timedelta(days=1))


def in_hours(span: timedelta) -> int:
    return _whole(span, timedelta(hours=1))


def in_minutes(span: timedelta) -> int:
    return _whole(span, timedelta(minutes=1))


def in_seconds(span: timedelta) -> int:
    return _whole(span, timedelta(seconds=1))


def year(at: date) -> int:
    return at.year


def month(at: date) -> int:
    return at.month


def day(at: date) -> int:
    return at.day


def length(text: str) -> int:
    """The number of characters (Unicode code points), as SQL's `length` counts them."""
    return len(text)


def contains(text: str, part: str) -> bool:
    return part in text


def starts_with(text: str, prefix: str) -> bool:
    return text.startswith(prefix)


def lower(text: str) -> str:
    return text.lower()


def upper(text: str) -> str:
    return text.upper()


def trim(text: str) -> str:
    return text.strip(WHITESPACE)


def count(values: Sized) -> int:
    return len(values)


def sum_ints(values: Sequence[int]) -> int:
    return sum(values, 0)


def sum_decimals(values: Sequence[Decimal]) -> Decimal:
    total = Decimal(0)
    for v in values:
        total = decimals.add(total, v)
    return total


def sum_durations(values: Sequence[timedelta]) -> timedelta:
    try:
        return sum(values, timedelta(0))
    except OverflowError:
        raise TimeRefused("the sum of the durations is beyond the largest duration") from None


def is_present(value: object) -> bool:
    """`isPresent(x)`: whether the optional `x` holds a value."""
    return value is not None
