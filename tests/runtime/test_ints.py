"""`loom.runtime.ints.fit`: the check where an int leaves the domain names where it was going,
the path inside a list or value object, and the value (a huge one without spelling it out)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

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
