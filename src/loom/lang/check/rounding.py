"""`round(x, S)` and `round(x, S, mode)`: a number with exactly S digits after the point.

S is a whole number literal from 0 to 50 (the scale is known where the code is checked, so the
scale of the result is too: `loom.lang.check.scales`); the mode, a bare name, is one of
`ir.ROUNDING_MODES` (`halfEven` when left out). The result is a `decimal`.
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.syntax import ast
from loom.lang.types import a, is_error, is_numeric
from loom.model import ir

_MODES = ", ".join(f"`{m}`" for m in ir.ROUNDING_MODES)
_USAGE = "write `round(x, 2)` (half-even) or `round(x, 2, halfUp)`"


def round_call(ck: Checker, e: ast.Call, scope: Scope, text: str) -> ir.Expr:
    """The IR of a `round(…)` call, or a poisoned expression (reported)."""
    args = [arg for arg in e.args if isinstance(arg, ast.Arg) and arg.name is None]
    if len(args) != len(e.args) or not 2 <= len(args) <= 3:
        ck.report(
            "loom.invalid-round",
            f"`round` takes a number, a scale and optionally a mode; it has {len(e.args)} "
            "argument" + ("" if len(e.args) == 1 else "s"),
            e.span,
            "not `round(x, S)` or `round(x, S, mode)`",
            help=_USAGE,
        )
        for arg in args:
            ck.expr(arg.value, scope)
        return ck.poison(e)
    value = ck.expr(args[0].value, scope, ir.DECIMAL)
    bad = False
    if not is_error(value.type) and not is_numeric(value.type):
        ck.report(
            "loom.type-mismatch",
            f"`round` rounds a number, not {a(value.type)}",
            args[0].value.span,
            f"this is {a(value.type)}",
            help=_USAGE,
        )
        bad = True
    scale_arg = args[1].value
    is_scale = isinstance(scale_arg, ast.Literal) and scale_arg.kind == "int"
    scale = scale_arg.value if isinstance(scale_arg, ast.Literal) else None
    if not is_scale or not isinstance(scale, int) or not 0 <= scale <= ir.MAX_DECIMAL_SCALE:
        ck.report(
            "loom.invalid-round",
            f"the scale of `round` is a whole number from 0 to {ir.MAX_DECIMAL_SCALE}, written "
            "as it is (the number of digits after the point)",
            scale_arg.span,
            "not a scale",
            help=_USAGE,
        )
        bad = True
    mode = ir.ROUNDING_MODES[0]
    if len(args) == 3:
        m = args[2].value
        if not isinstance(m, ast.Name) or m.name not in ir.ROUNDING_MODES:
            name = m.name if isinstance(m, ast.Name) else ck.text(m.span)
            ck.report(
                "loom.unknown-rounding-mode",
                f"`{name}` is not a rounding mode; the modes are {_MODES}",
                m.span,
                "not a rounding mode",
                help=did_you_mean(name, ir.ROUNDING_MODES)
                or "write one of the modes as a bare name, e.g. `round(x, 2, halfUp)`; "
                "`halfEven` is the default",
            )
            bad = True
        else:
            mode = m.name
    if bad or is_error(value.type):
        return ck.poison(e)
    assert isinstance(scale, int)
    return ir.Round(value, scale, mode, ir.DECIMAL, text)
