"""The built-in functions as generated code computes them (`loom.runtime.functions`): months and
years clamped to the month's end, durations counted truncating toward zero, and the string
functions' SQL answering on SQLite what Python answers."""

from __future__ import annotations

import calendar
import sqlite3
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import literal, select
from sqlalchemy.dialects import sqlite

from loom.runtime import LoomError, functions, functions_sql
from loom.runtime.storage.criteria import install_sqlite_functions
from loom.runtime.times import TimeRefused

DATES = st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31))
MONTHS = st.integers(min_value=-2000, max_value=2000)


@pytest.mark.parametrize(
    ("start", "n", "moved"),
    [
        (date(2027, 1, 31), 1, date(2027, 2, 28)),
        (date(2028, 1, 31), 1, date(2028, 2, 29)),
        (date(2028, 2, 29), 12, date(2029, 2, 28)),
        (date(2028, 2, 29), 48, date(2032, 2, 29)),
        (date(2027, 3, 31), -1, date(2027, 2, 28)),
        (date(2027, 5, 31), 1, date(2027, 6, 30)),
        (date(2027, 12, 15), 1, date(2028, 1, 15)),
        (date(2027, 1, 15), -1, date(2026, 12, 15)),
    ],
)
def test_months_clamp_to_the_month_end(start: date, n: int, moved: date) -> None:
    assert functions.add_months(start, n) == moved


def test_add_years_of_a_leap_day() -> None:
    assert functions.add_years(date(2028, 2, 29), 1) == date(2029, 2, 28)
    assert functions.add_years(date(2028, 2, 29), 4) == date(2032, 2, 29)
    assert functions.add_years(date(2028, 2, 29), -1) == date(2027, 2, 28)


def test_a_datetime_keeps_its_time_of_day() -> None:
    t = datetime(2027, 1, 31, 23, 59, 59, 5, tzinfo=UTC)
    assert functions.add_months(t, 1) == datetime(2027, 2, 28, 23, 59, 59, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("start", "n"), [(date(9999, 12, 1), 1), (date(1, 1, 31), -1), (date(2027, 1, 1), 10**9)]
)
def test_beyond_the_calendar_is_refused(start: date, n: int) -> None:
    with pytest.raises(TimeRefused):
        functions.add_months(start, n)
    with pytest.raises(TimeRefused):
        functions.add_years(start, n)


@given(DATES, MONTHS)
def test_add_months_moves_by_whole_months_clamped(start: date, n: int) -> None:
    total = start.year * 12 + start.month - 1 + n
    if not 12 <= total < 10000 * 12:
        with pytest.raises(TimeRefused):
            functions.add_months(start, n)
        return
    moved = functions.add_months(start, n)
    assert moved.year * 12 + moved.month - 1 == total
    last = calendar.monthrange(moved.year, moved.month)[1]
    assert moved.day == min(start.day, last)
    if start.day <= 28:  # no clamping: the way back is exact
        assert functions.add_months(moved, -n) == start


@given(DATES, st.integers(min_value=-200, max_value=200))
def test_a_year_is_twelve_months(start: date, n: int) -> None:
    try:
        by_months = functions.add_months(start, 12 * n)
    except TimeRefused:
        with pytest.raises(TimeRefused):
            functions.add_years(start, n)
        return
    assert functions.add_years(start, n) == by_months


def test_durations_count_truncating_toward_zero() -> None:
    assert functions.in_days(timedelta(hours=36)) == 1
    assert functions.in_days(timedelta(hours=-36)) == -1
    assert functions.in_hours(timedelta(minutes=-59)) == 0
    assert functions.in_minutes(timedelta(seconds=119)) == 1
    assert functions.in_seconds(timedelta(microseconds=-1_500_000)) == -1
    assert functions.in_days(date(2028, 3, 1) - date(2028, 2, 1)) == 29


@given(st.timedeltas())
def test_counts_are_the_truncated_quotient(span: timedelta) -> None:
    micros = span // timedelta(microseconds=1)
    for fn, unit in [
        (functions.in_days, 86_400_000_000),
        (functions.in_hours, 3_600_000_000),
        (functions.in_minutes, 60_000_000),
        (functions.in_seconds, 1_000_000),
    ]:
        n = fn(span)
        assert abs(n) * unit <= abs(micros) < (abs(n) + 1) * unit
        assert n == 0 or (n < 0) == (micros < 0)


def test_date_parts() -> None:
    d = date(2028, 2, 29)
    assert (functions.year(d), functions.month(d), functions.day(d)) == (2028, 2, 29)


# A `string` holds no NUL and no lone surrogate (`values.text`).
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
_DB = sqlite3.connect(":memory:")
install_sqlite_functions(_DB)


def _sqlite(name: str, *args: str) -> object:
    query = select(getattr(functions_sql, name)(*(literal(a) for a in args)))
    compiled = query.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": False})
    params = [compiled.params[k] for k in compiled.positiontup or []]
    return _DB.execute(str(compiled), params).fetchone()[0]


@given(TEXT, TEXT)
def test_string_functions_in_sqlite_answer_as_in_memory(s: str, part: str) -> None:
    assert _sqlite("length", s) == functions.length(s)
    assert bool(_sqlite("contains", s, part)) == functions.contains(s, part)
    assert bool(_sqlite("starts_with", s, part)) == functions.starts_with(s, part)
    assert _sqlite("lower", s) == functions.lower(s)
    assert _sqlite("upper", s) == functions.upper(s)
    assert _sqlite("trim", s) == functions.trim(s)


@pytest.mark.parametrize("part", ["%", "_", "a%", "A"])
def test_like_wildcards_and_case_are_not_special(part: str) -> None:
    assert not _sqlite("contains", "abc", part)
    assert not _sqlite("starts_with", "abc", part)


def test_sums_counts_and_presence() -> None:
    assert functions.sum_ints([]) == 0 and functions.sum_ints([3, -1, 4]) == 6
    total = functions.sum_decimals([Decimal("0.10"), Decimal("0.20"), Decimal(1)])
    assert total == Decimal("1.30") and isinstance(total, Decimal)
    assert functions.sum_decimals([]) == Decimal(0)
    assert functions.sum_durations([]) == timedelta(0)
    assert functions.sum_durations([timedelta(hours=1), timedelta(days=1)]) == timedelta(hours=25)
    assert functions.count([]) == 0 and functions.count(["a", "b"]) == 2
    assert functions.is_present(0) and functions.is_present("") and not functions.is_present(None)


def test_sums_beyond_the_bounds_are_refused_not_crashes() -> None:
    with pytest.raises(TimeRefused):
        functions.sum_durations([timedelta.max, timedelta(days=1)])
    huge = Decimal("9" * 50)
    with pytest.raises(LoomError) as refused:
        functions.sum_decimals([huge, huge])
    assert refused.value.status == 422
