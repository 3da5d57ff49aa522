"""`loom.runtime.ints.fit`: the check where an int leaves the domain names where it was going,
the path inside a list or value object, and the value (a huge one without spelling it out)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID, uuid4

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loom.runtime import ints
from loom.runtime.decimals import ArithmeticRefused


@dataclass(frozen=True)
class Line:
    sku: str
    quantity: int


def test_values_that_fit_are_answered_as_they_are() -> None:
    lines = [Line("a", ints.INT64_MAX), Line("b", ints.INT64_MIN)]
    assert ints.fit(lines, "Order.lines") is lines
    assert ints.fit(True, "x") is True  # a bool is no int here
    assert ints.fit(None, "x") is None


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (ints.INT64_MAX + 1, "Counter.count would be 9223372036854775808, which does not fit"),
        (ints.INT64_MIN - 1, "Counter.count would be -9223372036854775809"),
        ([1, 2, 2**64], "Counter.count[2] would be 18446744073709551616"),
        ([Line("a", 1), Line("b", -(2**70))], "Counter.count[1].quantity would be -"),
        (10**5000, "Counter.count would be a number of more than 256 bits"),
    ],
    ids=["max+1", "min-1", "list", "value-object", "huge"],  # str() of 10**5000 is refused
)
def test_a_value_beyond_64_bits_is_refused_naming_where(value: object, said: str) -> None:
    with pytest.raises(ArithmeticRefused) as refused:
        ints.fit(value, "Counter.count")
    assert refused.value.detail.startswith(said)
    assert refused.value.status == 422


@dataclass(frozen=True)
class Moved:
    """An event with a field of every kind an event has."""

    id: UUID
    note: str
    urgent: bool
    reason: str | None
    price: Decimal
    at: datetime
    ratio: float
    count: int
    line: Line
    lines: list[Line]


def _first_beyond(value: Any, path: str = "") -> tuple[str, int] | None:
    """What `ints.beyond` answers, the plain way: every value visited, depth first."""
    if type(value) is int:
        return None if ints.INT64_MIN <= value <= ints.INT64_MAX else (path, value)
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _first_beyond(item, f"{path}[{i}]")
            if found is not None:
                return found
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            found = _first_beyond(getattr(value, field.name), f"{path}.{field.name}")
            if found is not None:
                return found
    return None


_INTS = st.one_of(st.integers(-5, 5), st.integers(), st.sampled_from([2**63, -(2**63) - 1]))


@given(_INTS, _INTS, st.lists(_INTS, max_size=3), st.booleans())
def test_the_first_int_beyond_64_bits_in_an_event_is_found_whatever_else_it_holds(
    count: int, quantity: int, more: list[int], urgent: bool
) -> None:
    event = Moved(
        uuid4(),
        "note",
        urgent,
        None,
        Decimal("1.50"),
        datetime.now(UTC),
        0.5,
        count,
        Line("a", quantity),
        [Line("b", q) for q in more],
    )
    assert ints.beyond(event) == _first_beyond(event)
    assert ints.all_fit(event) is (_first_beyond(event) is None)


@dataclass(frozen=True)
class Pair:
    left: Any
    right: Any


_VALUES = st.recursive(
    st.one_of(_INTS, st.text(max_size=2), st.none(), st.booleans(), st.decimals(allow_nan=False)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.builds(Line, st.text(max_size=2), _INTS),
        st.builds(Pair, inner, inner),
    ),
    max_leaves=8,
)


@given(_VALUES)
def test_all_fit_answers_what_beyond_does_for_any_value(value: object) -> None:
    # the fast path steps over leaves and checks ints in place; anything else it hands to the walk
    assert ints.all_fit(value) is (ints.beyond(value) is None)
    assert ints.all_fit(value) is (_first_beyond(value) is None)
