"""`decimal(P, S)`: a decimal of at most P significant digits, S of them after the point.

P is 1..100 and S is 0..P, with at most 50 digits on either side of the point (the bounds of every
`decimal`, docs/language.md "Decimals"): `decimal(10, 2)` holds -99999999.99 to 99999999.99.
"""

from __future__ import annotations

from loom.lang.diagnostics import Sink
from loom.lang.syntax import ast
from loom.model import ir

_RULE = (
    f"P is a whole number from 1 to {ir.MAX_DECIMAL_PRECISION} and S one from 0 to P, with at most "
    f"{ir.MAX_DECIMAL_SCALE} digits after the point and {ir.MAX_DECIMAL_SCALE} before it"
)


def decimal_type(t: ast.TypeRef, sink: Sink) -> ir.PrimitiveType | None:
    """The type `decimal(P, S)` names, or None (reported) when P or S is out of range."""
    assert t.args is not None and t.args_span is not None
    values = [int(a.text) if a.text.isdigit() else None for a in t.args]
    problem = None
    if len(values) != 2:
        problem = (
            f"`decimal(…)` takes a precision and a scale, `decimal(P, S)`; it has {len(values)}"
        )
    elif values[0] is None or values[1] is None:
        bad = t.args[0] if values[0] is None else t.args[1]
        problem = f"`{bad.text}` is not a whole number: {_RULE}"
    else:
        p, s = values[0], values[1]
        if not 1 <= p <= ir.MAX_DECIMAL_PRECISION or s > p:
            problem = f"`decimal({p}, {s})` is out of range: {_RULE}"
        elif s > ir.MAX_DECIMAL_SCALE or p - s > ir.MAX_DECIMAL_SCALE:
            problem = f"`decimal({p}, {s})` has too many digits on one side of the point: {_RULE}"
        else:
            return ir.PrimitiveType("decimal", precision=p, scale=s)
    sink.report(
        "loom.invalid-decimal-precision",
        problem,
        t.args_span,
        "not a valid precision and scale",
        secondary=[(t.name_span, "a decimal of declared precision and scale")],
        help="write `decimal(10, 2)` for amounts up to 99999999.99, or plain `decimal` for one "
        "bounded only by the 50 + 50 digits of every decimal",
    )
    return None
