"""`loom.runtime.decimals.round_to` (`round(x, S, mode)`) and the `decimal(P, S)` bound
(`scale_error`, `fits`, `to_scale`): every mode on ties, negative numbers and exact values, and a
property against Python's decimal module with the matching rounding constant."""

from __future__ import annotations

from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, ROUND_UP, Context, Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loom.model import ir
from loom.runtime import ArithmeticRefused, decimals

D = Decimal
PYTHON = {"halfEven": ROUND_HALF_EVEN, "halfUp": ROUND_HALF_UP, "down": ROUND_DOWN, "up": ROUND_UP}


def test_the_modes_are_the_languages() -> None:
    assert tuple(decimals.ROUNDING_MODES) == ir.ROUNDING_MODES
    assert decimals.ROUNDING_MODES == PYTHON


@pytest.mark.parametrize(
    ("value", "mode", "expected"),
    [
        ("2.5", "halfEven", "2"),
        ("3.5", "halfEven", "4"),
        ("-2.5", "halfEven", "-2"),
        ("2.5", "halfUp", "3"),
        ("-2.5", "halfUp", "-3"),
        ("2.9", "down", "2"),
        ("-2.9", "down", "-2"),
        ("2.1", "up", "3"),
        ("-2.1", "up", "-3"),
        ("2", "up", "2"),
        ("-0.4", "halfEven", "0"),
    ],
)
def test_modes_at_scale_0(value: str, mode: str, expected: str) -> None:
    assert str(decimals.round_to(D(value), 0, mode)) == expected


def test_the_prorated_amount() -> None:
    assert str(decimals.round_to(decimals.div(D("14.00") * 10, 30), 2)) == "4.67"
    assert str(decimals.round_to(D("0.025"), 2)) == "0.02"
    assert str(decimals.round_to(D("0.025"), 2, "halfUp")) == "0.03"


def test_the_result_has_exactly_the_scale() -> None:
    assert str(decimals.round_to(7, 2)) == "7.00"
    assert str(decimals.round_to(D("1E+3"), 1)) == "1000.0"
    assert str(decimals.round_to(D("99.995"), 2)) == "100.00"


def test_a_result_beyond_the_bounds_is_refused() -> None:
    with pytest.raises(ArithmeticRefused):
        decimals.round_to(D("9" * 50 + ".5"), 0)


@given(
    st.decimals(
        min_value=D("-1e20"), max_value=D("1e20"), places=12, allow_nan=False, allow_infinity=False
    ),
    st.integers(min_value=0, max_value=10),
    st.sampled_from(ir.ROUNDING_MODES),
)
def test_round_to_agrees_with_python(value: Decimal, scale: int, mode: str) -> None:
    ctx = Context(prec=100, rounding=PYTHON[mode])
    expected = value.quantize(D(1).scaleb(-scale), context=ctx)
    got = decimals.round_to(value, scale, mode)
    assert got == expected
    assert got.as_tuple().exponent == -scale


@pytest.mark.parametrize(
    ("value", "fits"),
    [
        ("12.34", True),
        ("12.340", True),  # trailing zeros are not digits
        ("12.345", False),
        ("99999999.99", True),
        ("100000000", False),
        ("-99999999.99", True),
        ("0", True),
        ("1E+3", True),
    ],
)
def test_the_bound_of_decimal_10_2(value: str, fits: bool) -> None:
    assert decimals.fits(D(value), 10, 2) is fits
    if fits:
        assert decimals.to_scale(D(value), 10, 2).as_tuple().exponent == -2
    else:
        with pytest.raises(ValueError, match="decimal\\(10, 2\\) has at most"):
            decimals.to_scale(D(value), 10, 2)
