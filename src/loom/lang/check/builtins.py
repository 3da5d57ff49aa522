"""Typing of the built-in functions of `loom.model.builtins` (`addMonths(d, n)`, `inDays(x)`,
`year(d)`, `length(s)`, `contains(s, part)`, `count(xs)`, `sum(xs)`, `isPresent(x)` …): the count
of arguments (`loom.argument-count`) and each argument's type (`loom.type-mismatch`), each with
the function's example as the help.
"""

from __future__ import annotations

from loom.lang.check import lists
from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.syntax import ast
from loom.lang.types import a, is_error
from loom.model import ir
from loom.model.builtins import BUILTINS, ELEMENT, TIME

FUNCTIONS = tuple(BUILTINS)
_TIMES = (ir.DATE, ir.DATETIME)


def call(ck: Checker, e: ast.Call, scope: Scope, name: str, text: str) -> ir.Expr:
    """The IR of a call of the built-in `name`, or a poisoned expression (reported)."""
    spec = BUILTINS[name]
    args = [arg.value for arg in e.args if isinstance(arg, ast.Arg) and arg.name is None]
    want = len(spec.params)
    if len(e.args) != want or len(args) != want:
        for v in args:
            ck.expr(v, scope)
        count = "one argument" if want == 1 else f"{want} arguments"
        got = (
            f"got {len(e.args)}"
            if len(args) == len(e.args)
            else "given by name; pass them by position"
        )
        ck.report(
            "loom.argument-count",
            f"`{name}` takes {count}, {got}",
            e.span,
            f"{want} expected",
            help=f"write e.g. `{spec.sample}`",
        )
        return ck.poison(e)
    typed: list[ir.Expr] = []
    bad = False
    for i, (node, param) in enumerate(zip(args, spec.params, strict=True)):
        which = "" if want == 1 else (" as its first argument", " as its second argument")[i]
        if param in lists.PARAMS:
            x = lists.argument(ck, name, node, param, scope)
            typed.append(x)
            bad = bad or is_error(x.type)
            continue
        expected = None if param == TIME else ir.PrimitiveType(param)  # type: ignore[arg-type]
        x = ck.expr(node, scope, expected)
        typed.append(x)
        if is_error(x.type):
            bad = True
        elif param == TIME and x.type not in _TIMES:
            bad = True
            ck.report(
                "loom.type-mismatch",
                f"`{name}` takes a `date` or a `datetime`{which}, not {a(x.type)}",
                node.span,
                f"this is {a(x.type)}",
                help=f"write e.g. `{spec.sample}`" + lists.unwrap(x.type),
            )
        elif expected is not None and not ck.mismatch(
            x,
            node,
            expected,
            f"`{name}` takes {a(expected)}{which}, not {a(x.type)}",
            help=f"write e.g. `{spec.sample}`" + lists.unwrap(x.type),
        ):
            bad = True
    if bad:
        return ck.poison(e)
    if spec.result == TIME:
        result = typed[0].type
    elif spec.result == ELEMENT:
        result = lists.element(typed[0].type)
    else:
        result = ir.PrimitiveType(spec.result)  # type: ignore[arg-type]
    return ir.BuiltinCall(name, tuple(typed), result, text)
