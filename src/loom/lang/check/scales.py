"""The static scale of a number: how many digits after the point an expression's value has, where
the checker can tell without running it. A value whose known scale exceeds the S of the
`decimal(P, S)` it is stored in is `loom.decimal-scale-exceeded`; one whose scale is unknown (a `/`,
a plain `decimal`) is checked when it is stored (a 422, never rounded).

    literal        the digits written after the point (`12.50`: 2; an int: 0)
    int            0
    decimal(P, S)  S (a field, parameter, local, function result of that type)
    + - %          the larger of the two
    *              the sum of the two
    /              unknown
    round(x, S)    S
"""

from __future__ import annotations

from loom.lang.diagnostics import Sink, Span
from loom.lang.types import AnyType, strip_optional
from loom.model import ir


def static_scale(x: ir.Expr) -> int | None:
    """The number of digits after the point `x`'s value has, or None when it is not known."""
    if isinstance(x, ir.Round):
        return x.scale
    if isinstance(x, ir.Literal_):
        if isinstance(x.value, bool) or x.value is None:
            return None
        if isinstance(x.value, int):
            return 0
        text = x.value.lower()
        if x.type != ir.DECIMAL or "e" in text:
            return None
        return len(text.partition(".")[2])
    if isinstance(x, ir.Unary):
        return static_scale(x.operand) if x.op == "-" else None
    if isinstance(x, ir.Binary):
        left, right = static_scale(x.left), static_scale(x.right)
        if left is None or right is None or x.op not in ("+", "-", "*", "%"):
            return None
        return left + right if x.op == "*" else max(left, right)
    if isinstance(x, ir.Conditional):
        then, other = static_scale(x.then), static_scale(x.otherwise)
        return None if then is None or other is None else max(then, other)
    return declared_scale(x.type)


def declared_scale(t: AnyType) -> int | None:
    """The scale every value of type `t` has: 0 of an `int`, S of a `decimal(P, S)`."""
    if t == ir.INT:
        return 0
    return t.scale if isinstance(t, ir.PrimitiveType) and t.name == "decimal" else None


def check_scale(sink: Sink, x: ir.Expr, span: Span, target: AnyType) -> bool:
    """Report `loom.decimal-scale-exceeded` when `x` is stored where `target`, a `decimal(P, S)`,
    is expected and its static scale exceeds S. True when it fits (or cannot be told)."""
    t = strip_optional(target)
    if not isinstance(t, ir.PrimitiveType) or t.scale is None or t.name != "decimal":
        return True
    scale = static_scale(x)
    if scale is None:
        _unrounded_division(sink, x, span, t)
        return True
    if scale <= t.scale:
        return True
    sink.report(
        "loom.decimal-scale-exceeded",
        f"this value has {scale} digits after the point, but a `decimal({t.precision}, "
        f"{t.scale})` holds at most {t.scale}; Loom never rounds it for you",
        span,
        f"{scale} digits after the point",
        help=f"round it to the declared scale: `round({x.text}, {t.scale})` "
        "(half-even; or give a mode, e.g. `halfUp`), or declare a larger scale",
    )
    return False


def division(x: ir.Expr) -> ir.Binary | None:
    """A `/` of decimals whose unrounded quotient flows into `x`'s value (not one inside a
    `round(…)`, a call or a comparison: their results have scales of their own)."""
    if isinstance(x, ir.Binary):
        if x.op == "/" and x.type == ir.DECIMAL:
            return x
        if x.op in ("+", "-", "*", "%"):
            return division(x.left) or division(x.right)
        return None
    if isinstance(x, ir.Unary) and x.op == "-":
        return division(x.operand)
    if isinstance(x, ir.Conditional):
        return division(x.then) or division(x.otherwise)
    return None


def _unrounded_division(sink: Sink, x: ir.Expr, span: Span, t: ir.PrimitiveType) -> None:
    """`loom.unrounded-division`: a quotient rarely fits S digits after the point, so the value
    is refused (422) at run time more often than not."""
    d = division(x)
    if d is None:
        return
    sink.report(
        "loom.unrounded-division",
        f"`{d.text}` is a division, whose digits after the point rarely fit the {t.scale} a "
        f"`decimal({t.precision}, {t.scale})` holds; Loom never rounds it for you, so most "
        "values would be refused when stored",
        span,
        "an unrounded division",
        help=f"round it to the declared scale: `round({x.text}, {t.scale})` (half-even; or give "
        "a mode, e.g. `halfUp`)",
    )
