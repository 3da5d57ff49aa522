"""The bounds of a `decimal` and the exact arithmetic generated code does with decimals.

A `decimal` holds at most `MAX_INTEGER_DIGITS` digits before the point and `MAX_SCALE` after it.
These two constants are the one definition of the bounds: the wire (`values.schemas.WireDecimal`), storage
(`types.DecimalText`) and the arithmetic below all read them, and docs/language.md states them.

Generated code never writes `a + b` on decimals: it calls `decimals.add(a, b)` (`sub`, `mul`, `div`,
`rem`, `neg`; `int_rem` for `%` of ints), so the rules hold wherever the code runs (a request, a relay delivery, the scheduler,
a user's test calling a domain method) instead of depending on the thread's decimal context.

- `+ - *` and `%` are exact: they run in `ARITHMETIC`, whose precision holds any product of two
  in-bounds values and which traps Inexact, so a result is never rounded.
- `/` is exact when the quotient has at most `MAX_SCALE` digits after the point; otherwise it is
  rounded half-even to `MAX_SCALE` digits. Besides `round(x, S, mode)` (`round_to`), that is the
  only rounding Loom ever does.
- A `decimal(P, S)` holds at most P - S digits before the point and S after it (`scale_error`); a
  value that does not fit is refused where it enters (the wire, an invariant, storage), never
  rounded, and is held padded to S places (`to_scale`).
- A result outside the bounds, or a division by zero, raises `ArithmeticRefused` (a 422 problem).
"""

from __future__ import annotations

import re
from decimal import (
    ROUND_DOWN,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    ROUND_UP,
    Context,
    Decimal,
    DecimalException,
    DivisionByZero,
    Inexact,
    InvalidOperation,
    Overflow,
    Underflow,
)
from typing import Any

from loom.runtime.values.errors import LoomError
from loom.runtime.values.problem_types import problem_type

__all__ = [
    "ARITHMETIC",
    "MAX_INTEGER_DIGITS",
    "MAX_SCALE",
    "ROUNDING_MODES",
    "ArithmeticRefused",
    "add",
    "bounds_error",
    "canonical",
    "div",
    "fit",
    "fit_scaled",
    "fits",
    "int_rem",
    "mul",
    "neg",
    "parse",
    "rem",
    "round_to",
    "scale_error",
    "sub",
    "to_scale",
]

MAX_INTEGER_DIGITS = 50
"""Digits before the decimal point a `decimal` may have (PostgreSQL NUMERIC allows far more)."""
MAX_SCALE = 50
"""Digits after the decimal point a `decimal` may have."""

BOUNDS = (
    f"a decimal has at most {MAX_INTEGER_DIGITS} digits before the point and {MAX_SCALE} after it"
)

# Twice the digits of the largest in-bounds value: the exact product of any two fits, so Inexact
# only ever fires for a chain whose intermediate result is already out of bounds.
ARITHMETIC = Context(
    prec=2 * (MAX_INTEGER_DIGITS + MAX_SCALE),
    rounding=ROUND_HALF_EVEN,
    traps=[Inexact, Overflow, Underflow, InvalidOperation, DivisionByZero],
)

_SCALE_QUANTUM = Decimal(1).scaleb(-MAX_SCALE)
_ONE = Decimal(1)
# Decimal() also reads "1_000", " 1 ", Unicode digits, "NaN" and "Infinity": the wire does not.
_DECIMAL_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


class ArithmeticRefused(LoomError):
    """Decimal arithmetic whose result does not fit the bounds of a `decimal`, or a division by
    zero: a 422, never a rounded or wrapped value."""

    status, type, title = problem_type("arithmetic-refused").parts()


def bounds_error(value: Decimal) -> str | None:
    """Why `value` is not a `decimal` (not finite, too many digits before or after the point), or
    None when it is one. Trailing zeros after the point do not count."""
    if not value.is_finite():
        return f"{value} is not a finite number"
    if value and value.adjusted() >= MAX_INTEGER_DIGITS:
        return f"{BOUNDS}; this one has {value.adjusted() + 1} before the point"
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    beyond = -exponent - MAX_SCALE  # digits after the last place a decimal may have
    if beyond > 0 and any(digits[-beyond:]):
        return f"{BOUNDS}; this one has more than {MAX_SCALE} after it"
    return None


def fit(value: Decimal) -> Decimal:
    """`value` in its canonical form, its exponent between -MAX_SCALE and 0 (`1E+3` is `1000`,
    trailing zeros beyond MAX_SCALE dropped); ValueError when it is out of bounds."""
    problem = bounds_error(value)
    if problem is not None:
        raise ValueError(problem)
    if not value:
        value = value.copy_abs()  # -0 is 0 (PostgreSQL would store it as 0 anyway)
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent > 0:
        return value.quantize(_ONE, context=ARITHMETIC)
    if exponent < -MAX_SCALE:
        return value.quantize(_SCALE_QUANTUM, context=ARITHMETIC)
    return value


def canonical(value: Decimal) -> Decimal:
    """`value` without a positive exponent (`1.0E+49` as PostgreSQL may hand it back is
    `10000000000000000000000000000000000000000000000000`) and without a sign on zero, whatever its
    size (a read never fails on a value stored before the bounds)."""
    if not value.is_finite():
        return value
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if not value:
        return Decimal(0) if exponent > 0 else value.copy_abs()
    if exponent > 0:
        return value.quantize(_ONE, context=Context(prec=value.adjusted() + 1))
    return value


def parse(value: Any) -> Decimal:
    """A wire value (a Decimal read from a JSON number, an int, or decimal text) as an in-bounds
    Decimal; ValueError saying what is wrong otherwise (a bool, a float, NaN, out of bounds...)."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, str)):
        # one error type for every bad wire value, whatever its kind
        raise ValueError("a decimal is a JSON number or a string of digits")  # noqa: TRY004
    if isinstance(value, str):
        if not _DECIMAL_TEXT.fullmatch(value):
            raise ValueError(f"{value[:40]!r} is not a decimal number")
        try:
            value = Decimal(value)
        except DecimalException:  # an exponent beyond what Decimal itself can hold
            raise ValueError(f"{value[:40]!r} is out of range: {BOUNDS}") from None
    elif isinstance(value, int):
        if abs(value) >= 10**MAX_INTEGER_DIGITS:
            raise ValueError(f"the number is out of range: {BOUNDS}")
        value = Decimal(value)
    return fit(value)


def _checked(op: str, compute: Any) -> Decimal:
    try:
        result: Decimal = compute()
    except DivisionByZero:
        raise ArithmeticRefused(f"`{op}` by zero has no value") from None
    except DecimalException:
        raise ArithmeticRefused(f"the result of `{op}` does not fit: {BOUNDS}") from None
    try:
        return fit(result)
    except ValueError:
        raise ArithmeticRefused(f"the result of `{op}` does not fit: {BOUNDS}") from None


def add(a: Decimal | int, b: Decimal | int) -> Decimal:
    """`a + b`, exact."""
    return _checked("+", lambda: ARITHMETIC.add(a, b))


def sub(a: Decimal | int, b: Decimal | int) -> Decimal:
    """`a - b`, exact."""
    return _checked("-", lambda: ARITHMETIC.subtract(a, b))


def mul(a: Decimal | int, b: Decimal | int) -> Decimal:
    """`a * b`, exact."""
    return _checked("*", lambda: ARITHMETIC.multiply(a, b))


def neg(a: Decimal | int) -> Decimal:
    """`-a`."""
    return _checked("-", lambda: ARITHMETIC.minus(a))


def rem(a: Decimal | int, b: Decimal | int) -> Decimal:
    """`a % b` with a decimal operand: the remainder of truncating division (its sign is the
    dividend's), exact."""
    return _checked("%", lambda: ARITHMETIC.remainder(a, b))


def int_rem(a: int, b: int) -> int:
    """`a % b` of two ints: the remainder of truncating division, its sign the dividend's (as for
    decimals, and as SQL computes it, so that a criterion agrees: `-7 % 2` is -1, not Python's
    1); a zero divisor is refused."""
    if not b:
        raise ArithmeticRefused("`%` by zero has no value")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def div(a: Decimal | int, b: Decimal | int) -> Decimal:
    """`a / b`: exact when the quotient has at most MAX_SCALE digits after the point, otherwise
    rounded half-even to MAX_SCALE digits (computed on integers, so it is rounded only once)."""
    return _checked("/", lambda: _divide(Decimal(a), Decimal(b)))


def _divide(a: Decimal, b: Decimal) -> Decimal:
    if not (a.is_finite() and b.is_finite()):
        raise InvalidOperation
    if not b:
        raise DivisionByZero
    sa, da, ea = a.as_tuple()
    sb, db, eb = b.as_tuple()
    assert isinstance(ea, int) and isinstance(eb, int)
    num = int("".join(map(str, da)))
    den = int("".join(map(str, db)))
    # a / b * 10**MAX_SCALE = num / den * 10**shift
    shift = ea - eb + MAX_SCALE
    if shift >= 0:
        num *= 10**shift
    else:
        den *= 10 ** (-shift)
    quotient, remainder = divmod(num, den)
    if 2 * remainder > den or (2 * remainder == den and quotient % 2):
        quotient += 1
    exponent = -MAX_SCALE
    if not remainder:
        # exact: keep no more digits after the point than Python's own exact quotient would
        ideal = ea - eb
        while exponent < ideal and quotient and quotient % 10 == 0:
            quotient //= 10
            exponent += 1
        if not quotient:
            exponent = max(min(ideal, 0), -MAX_SCALE)
    sign = "-" if sa != sb and quotient else ""
    return Decimal(f"{sign}{quotient}E{exponent}")


# -- decimal(P, S) and round(x, S, mode) ---------------------------------------------------------

ROUNDING_MODES = {
    "halfEven": ROUND_HALF_EVEN,
    "halfUp": ROUND_HALF_UP,
    "down": ROUND_DOWN,
    "up": ROUND_UP,
}
"""The modes of `round(x, S, mode)`, by their name in the language, first the default: `halfEven`
(a tie goes to the even digit), `halfUp` (a tie goes away from zero), `down` (toward zero, i.e.
truncation), `up` (away from zero). The one list of them: the checker reads it too."""


def round_to(value: Decimal | int, scale: int, mode: str = "halfEven") -> Decimal:
    """`round(value, scale, mode)`: `value` with exactly `scale` digits after the point (`0 <=
    scale <= MAX_SCALE`), rounded by `mode`; ArithmeticRefused when the result does not fit the
    bounds (`round(99…9.5, 0)` with fifty nines)."""
    exact = Decimal(value)
    quantum = Decimal(1).scaleb(-scale)
    # precision enough for every digit of the result, so quantize rounds only at `scale`
    digits = max(exact.adjusted() + 1, 0) + scale + 1
    ctx = Context(prec=digits, rounding=ROUNDING_MODES[mode])
    return _checked("round", lambda: exact.quantize(quantum, context=ctx))


def scale_error(value: Decimal, precision: int, scale: int) -> str | None:
    """Why `value` is not a `decimal(precision, scale)`, or None when it is one: at most
    `precision - scale` digits before the point and `scale` after it (trailing zeros after the
    point do not count: `12.500` is a `decimal(10, 2)`)."""
    if not value.is_finite():
        return f"{value} is not a finite number"
    whole = precision - scale
    if value and value.adjusted() >= whole:
        return (
            f"a decimal({precision}, {scale}) has at most {whole} digits before the point; "
            f"this one has {value.adjusted() + 1}"
        )
    exponent = value.normalize(ARITHMETIC).as_tuple().exponent if value else 0
    assert isinstance(exponent, int)
    if -exponent > scale:
        return (
            f"a decimal({precision}, {scale}) has at most {scale} digits after the point; this "
            f"one has {-exponent} (it is never rounded)"
        )
    return None


def fits(value: Decimal | int, precision: int, scale: int) -> bool:
    """Whether `value` is a `decimal(precision, scale)` (the implicit invariant of such a field)."""
    return scale_error(Decimal(value), precision, scale) is None


def fit_scaled(value: Any, precision: int, scale: int, what: str) -> Any:
    """`value` (a decimal, None, or a list of them) when each is a `decimal(precision, scale)`;
    else ArithmeticRefused naming `what`. A derived `decimal(P, S)` is checked so when its
    aggregate is saved: its answer is padded to S places, never rounded."""
    for item in value if isinstance(value, list) else (value,):
        if item is None:
            continue
        problem = scale_error(Decimal(item), precision, scale)
        if problem is not None:
            raise ArithmeticRefused(f"{what} would be {item}: {problem}")
    return value


def to_scale(value: Decimal | int, precision: int, scale: int) -> Decimal:
    """`value` written with exactly `scale` digits after the point (`12.5` as `12.50`): exact, as it
    fits; ValueError saying why otherwise."""
    exact = Decimal(value)
    problem = scale_error(exact, precision, scale)
    if problem is not None:
        raise ValueError(problem)
    return exact.quantize(Decimal(1).scaleb(-scale), context=ARITHMETIC)
