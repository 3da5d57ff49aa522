"""Durations, dates and datetimes: the wire form of a `duration`, its storage, and the time
arithmetic generated code does.

Calendar rules (docs/language.md, "Time"): every datetime is UTC; a `duration` is a fixed length
of time (a `timedelta`, exact to the microsecond), so `+ 1d` adds 24 hours to a datetime and one
calendar day to a date (2026-01-31 + 1d = 2026-02-01, 2028-02-28 + 1d = 2028-02-29). Months and
years are not durations: they have no fixed length.

- Wire: ISO 8601 durations with days, hours, minutes and seconds (`PT10M`, `P1DT2H`, `PT0.5S`,
  `-PT1H`); `P1M` / `P1Y` are refused with the reason. Output is canonical
  (`format_duration`): the largest units first, zero parts left out, `PT0S` for zero. A datetime
  is `YYYY-MM-DDTHH:MM:SS[.ffffff]` with `Z` or `±HH:MM`, turned into UTC on input and answered in
  UTC (`WireDatetime`, `DatetimeOut`); a date is `YYYY-MM-DD` (`WireDate`). Numbers, epoch
  seconds and a datetime sent for a date are refused with the form expected.
- Storage: `DurationMicros`, a BIGINT of microseconds on every database (exact; PostgreSQL's
  `interval` is exact too for fixed lengths, but SQLite has none, and one representation keeps the
  two back ends alike).
- Arithmetic: generated code never writes `a + b` on times; it calls the functions below,
  so a result out of the calendar's range, or a date moved by a part of a day, is a 422
  (`TimeRefused`), never a 500 or a silently dropped remainder.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema
from pydantic_core import PydanticCustomError
from sqlalchemy import BigInteger
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from loom.runtime.values.clock import now
from loom.runtime.values.errors import LoomError
from loom.runtime.values.problem_types import problem_type

__all__ = [
    "DatetimeOut",
    "DurationMicros",
    "DurationOut",
    "TimeRefused",
    "WireDate",
    "WireDatetime",
    "WireDuration",
    "date_minus",
    "date_of",
    "date_plus",
    "datetime_minus",
    "datetime_plus",
    "days",
    "days_between",
    "duration_minus",
    "duration_plus",
    "format_duration",
    "hours",
    "minutes",
    "parse_duration",
    "seconds",
    "start_of",
    "times",
    "today",
]

_DAY = timedelta(days=1)
_ISO = re.compile(
    r"(?P<sign>[-+])?P(?!$)(?:(?P<d>[0-9]+)D)?"
    r"(?:T(?=[0-9])(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+(?:[.,][0-9]{1,6})?)S)?)?"
)
_CALENDAR = re.compile(r"[-+]?P[0-9]+[YM]")
# RFC 3339's `date-time` (the OpenAPI `format`): the profile of ISO 8601 the docs name. `[0-9]`,
# not `\d`, which would take digits of other scripts.
_DATE_TEXT = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_WIRE_DATE = re.compile(_DATE_TEXT)
_WIRE_DATETIME = re.compile(
    _DATE_TEXT + r"T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[-+][0-9]{2}:[0-9]{2})"
)
_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?")
_NO_OFFSET = re.compile(_DATE_TEXT + r"[T ][0-9:.]+")
_LONG_FRACTION = re.compile(_DATE_TEXT + r"T[0-9:]+\.[0-9]{7,}(?:Z|[-+][0-9:]+)")
_DATETIME_FORM = (
    "an ISO 8601 string with an offset, e.g. '2026-11-29T10:00:00Z' or '2026-11-29T12:00:00+02:00'"
)
_DATE_FORM = "an ISO 8601 string YYYY-MM-DD, e.g. '2026-11-29'"


class TimeRefused(LoomError):
    """Time arithmetic with no answer: a date moved by a part of a day, or a result outside the
    calendar (before year 1, after 9999) or outside a duration's range. A 422, never a 500."""

    status, type, title = problem_type("time-refused").parts()


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration of days, hours, minutes and seconds. ValueError says what is wrong."""
    if _CALENDAR.match(text):
        raise ValueError(
            f"{text!r}: months and years are not durations (a month has no fixed length); "
            "write days, hours, minutes and seconds, e.g. 'P30D' or 'PT10M'"
        )
    m = _ISO.fullmatch(text)
    if m is None or text.endswith("T"):
        raise ValueError(
            f"{text!r} is not an ISO 8601 duration; write e.g. 'PT10M', 'P1DT2H' or 'PT0.5S'"
        )
    seconds_text = (m["s"] or "0").replace(",", ".")
    whole, _, fraction = seconds_text.partition(".")
    try:
        value = timedelta(
            days=int(m["d"] or 0),
            hours=int(m["h"] or 0),
            minutes=int(m["m"] or 0),
            seconds=int(whole),
            microseconds=int(fraction.ljust(6, "0")) if fraction else 0,
        )
    except OverflowError:
        raise ValueError(f"{text!r} is longer than a duration can be") from None
    return -value if m["sign"] == "-" else value


def format_duration(value: timedelta) -> str:
    """The canonical ISO 8601 text of a duration: `PT10M`, `P1DT2H`, `PT0.5S`, `-PT1H`, `PT0S`."""
    if value < timedelta(0):
        return "-" + format_duration(-value)
    micros = value // timedelta(microseconds=1)
    total_seconds, micro = divmod(micros, 1_000_000)
    day, rest = divmod(total_seconds, 86_400)
    hour, rest = divmod(rest, 3_600)
    minute, second = divmod(rest, 60)
    clock_part = ""
    if hour:
        clock_part += f"{hour}H"
    if minute:
        clock_part += f"{minute}M"
    if second or micro:
        clock_part += f"{second}.{micro:06d}".rstrip("0").rstrip(".") + "S"
    if not day and not clock_part:
        return "PT0S"
    return "P" + (f"{day}D" if day else "") + (f"T{clock_part}" if clock_part else "")


def _wire_duration(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError(
            "duration_invalid", "a duration is an ISO 8601 string, e.g. 'PT10M' or 'P1DT2H'"
        )
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise PydanticCustomError("duration_invalid", str(exc)) from None


WireDuration = Annotated[timedelta, BeforeValidator(_wire_duration)]
"""A `duration` on input: an ISO 8601 string only (never a number of seconds)."""
DurationOut = Annotated[
    timedelta, PlainSerializer(format_duration, return_type=str, when_used="json")
]
"""A `duration` on output: its canonical ISO 8601 text."""


def _wire_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):  # built in Python (an in-process call), not read from JSON
        if value.tzinfo is None:
            raise PydanticCustomError(
                "datetime_invalid", f"a datetime has an offset: {_DATETIME_FORM}"
            )
        return _in_utc(value, value)
    if not isinstance(value, str):
        raise PydanticCustomError("datetime_invalid", f"a datetime is {_DATETIME_FORM}")
    shown = repr(value[:40])
    if not _WIRE_DATETIME.fullmatch(value):
        if _LONG_FRACTION.fullmatch(value):
            why = "has more than 6 digits of a second (a datetime is exact to the microsecond)"
        elif _NUMBER.fullmatch(value):
            why = "is a number, not a datetime (epoch seconds are not one)"
        elif _WIRE_DATE.fullmatch(value):
            why = "is a date, with no time of day"
        elif _NO_OFFSET.fullmatch(value):
            why = "has no offset (write Z for UTC)"
        else:
            why = "is not a datetime"
        raise PydanticCustomError(
            "datetime_invalid", f"{shown} {why}: a datetime is {_DATETIME_FORM}"
        )
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError(
            "datetime_invalid", f"{shown} is not a real instant of the calendar"
        ) from None
    return _in_utc(parsed, shown)


def _in_utc(value: datetime, shown: object) -> datetime:
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise PydanticCustomError(
            "datetime_invalid", f"{shown} is outside the calendar in UTC (years 1 to 9999)"
        ) from None


def _wire_date(value: Any) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("date_invalid", f"a date is {_DATE_FORM}")
    shown = repr(value[:40])
    if not _WIRE_DATE.fullmatch(value):
        # a datetime's day depends on its offset: taking it would silently pick a local day
        datetime_sent = _WIRE_DATE.match(value) is not None
        why = "is a datetime, not a date" if datetime_sent else "is not a date"
        raise PydanticCustomError("date_invalid", f"{shown} {why}: a date is {_DATE_FORM}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError(
            "date_invalid", f"{shown} is not a real day of the calendar"
        ) from None


def _utc_text(value: datetime) -> str:
    at = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return at.isoformat().replace("+00:00", "Z")


WireDatetime = Annotated[datetime, BeforeValidator(_wire_datetime)]
"""A `datetime` on input: an ISO 8601 string with an offset (RFC 3339), turned into UTC; never a
number, epoch seconds or a local time."""
WireDate = Annotated[date, BeforeValidator(_wire_date)]
"""A `date` on input: `YYYY-MM-DD` only; never a number or a datetime (whose day is its offset's)."""
DatetimeOut = Annotated[
    datetime,
    PlainSerializer(_utc_text, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "format": "date-time"}, mode="serialization"),
]
"""A `datetime` on output: in UTC, `2026-11-29T10:00:00Z`, whatever offset the value carries."""


class DurationMicros(TypeDecorator[timedelta]):
    """A `duration` column: a BIGINT of microseconds on every database (exact)."""

    impl = BigInteger
    cache_ok = True

    def process_bind_param(self, value: timedelta | None, dialect: Dialect) -> int | None:
        return None if value is None else value // timedelta(microseconds=1)

    def process_result_value(self, value: Any, dialect: Dialect) -> timedelta | None:
        return None if value is None else timedelta(microseconds=int(value))


# ---- the functions and operators of the language


def today() -> date:
    """`today()`: the date of `now()` (UTC), so the runtime clock drives both."""
    return now().date()


def seconds(n: int) -> timedelta:
    return _span(n, 1)


def minutes(n: int) -> timedelta:
    return _span(n, 60)


def hours(n: int) -> timedelta:
    return _span(n, 3_600)


def days(n: int) -> timedelta:
    return _span(n, 86_400)


def _span(n: int, unit: int) -> timedelta:
    try:
        return timedelta(seconds=n * unit)
    except OverflowError:
        raise TimeRefused(f"{n} × {unit}s is longer than a duration can be") from None


def date_of(value: datetime) -> date:
    """`dateOf(t)`: the UTC calendar date of a datetime."""
    return value.astimezone(UTC).date()


def start_of(value: date) -> datetime:
    """`startOf(d)`: the datetime at 00:00 UTC of a date."""
    return datetime.combine(value, time(0), tzinfo=UTC)


def datetime_plus(at: datetime, span: timedelta) -> datetime:
    """`t + d` (and `d + t`)."""
    return _shifted(at, span)


def datetime_minus(at: datetime, span: timedelta) -> datetime:
    """`t - d`."""
    return _shifted(at, -span)


def date_plus(day: date, span: timedelta) -> date:
    """`d + 1d`: whole days only."""
    return _shifted(day, _whole_days(span))


def date_minus(day: date, span: timedelta) -> date:
    """`d - 1d`: whole days only."""
    return _shifted(day, -_whole_days(span))


def days_between(later: date, earlier: date) -> timedelta:
    """`a - b` of two dates: whole days."""
    return timedelta(days=(later - earlier).days)


def duration_plus(left: timedelta, right: timedelta) -> timedelta:
    return _duration(lambda: left + right)


def duration_minus(left: timedelta, right: timedelta) -> timedelta:
    return _duration(lambda: left - right)


def times(span: timedelta, n: int) -> timedelta:
    """`d * n` (and `n * d`)."""
    return _duration(lambda: span * n)


_T = TypeVar("_T", date, datetime)


def _shifted(at: _T, span: timedelta) -> _T:
    try:
        return at + span
    except OverflowError:
        raise TimeRefused("the result is outside the calendar (years 1 to 9999)") from None


def _whole_days(span: timedelta) -> timedelta:
    if span % _DAY:
        raise TimeRefused(
            f"a date moves by whole days only, not by {format_duration(span)}; "
            "compute with a datetime (startOf(d)) for parts of a day"
        )
    return span


def _duration(compute: Callable[[], timedelta]) -> timedelta:
    try:
        return compute()
    except OverflowError:
        raise TimeRefused("the result is longer than a duration can be") from None
