"""Typing of what expressions do with lists and optional values: membership (`x in xs`), and the
arguments of the built-ins `count(xs)` (any list), `sum(xs)` (a list of `int`, `decimal` or
`duration`) and `isPresent(x)` (an optional value). `xs + ys` is typed with the other operators
(`expressions`).
"""

from __future__ import annotations

from loom.lang.check import times
from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.syntax import ast
from loom.lang.types import (
    ERROR,
    AnyType,
    a,
    comparable,
    is_error,
    is_record,
    show,
    strip_optional,
)
from loom.model import ir
from loom.model.builtins import BUILTINS, LIST, NUMBERS, OPTIONAL

PARAMS = frozenset({LIST, NUMBERS, OPTIONAL})
_SUMMED = (ir.INT, ir.DECIMAL, ir.DURATION)


def membership(ck: Checker, e: ast.Binary, scope: Scope, text: str) -> ir.Expr:
    """`x in xs`: a `bool`, true when an element of the list `xs` equals `x`."""
    left = ck.expr(e.left, scope)
    hint = None if is_error(left.type) else ir.ListType(strip_optional(left.type))  # type: ignore[arg-type]
    right = ck.expr(e.right, scope, hint)
    lt, rt = left.type, right.type
    if is_error(lt) or is_error(rt):
        return ir.Binary("in", left, right, ir.BOOL, text)
    if not isinstance(rt, ir.ListType):
        ck.report(
            "loom.type-mismatch",
            f"`in` looks for a value in a list, and `{ck.text(e.right.span)}` is {a(rt)}",
            e.right.span,
            f"this is {a(rt)}",
            help=_not_a_list(rt, ck.text(e.left.span), ck.text(e.right.span)),
        )
    elif not comparable(lt, rt.element):
        ck.report(
            "loom.type-mismatch",
            f"cannot look for {a(lt)} in {a(rt)}",
            e.span,
            f"{a(lt)} in {a(rt)}",
            secondary=[(e.left.span, f"this is {a(lt)}")],
            help=f"look for a `{show(rt.element)}` in it (an `int` matches a `decimal`)",
        )
    return ir.Binary("in", left, right, ir.BOOL, text)


def _not_a_list(t: AnyType, value: str, within: str) -> str:
    if isinstance(t, ir.OptionalType) and isinstance(t.inner, ir.ListType):
        return "an optional list is read inside `if let xs = …` first"
    if t == ir.STRING:
        return f"to look for text in a string, write `contains({within}, {value})`"
    return f"write a list after `in`: a list field or parameter, or `[a, b]` (`{value} in [a, b]`)"


def argument(ck: Checker, name: str, node: ast.Expr, param: str, scope: Scope) -> ir.Expr:
    """The typed argument of `count`, `sum` or `isPresent` (its `param` kind), reported and of
    the ERROR type when it does not fit."""
    x = ck.expr(node, scope)
    t = x.type
    if is_error(t):
        return x
    sample = f"write e.g. `{BUILTINS[name].sample}`"
    if param == OPTIONAL:
        if isinstance(t, ir.OptionalType):
            return x
        ck.report(
            "loom.type-mismatch",
            f"`{name}` takes an optional value (`T?`), and `{x.text}` is {a(t)}, which always "
            "has one",
            node.span,
            f"this is {a(t)}, never absent",
            help=f"remove the test: `{x.text}` is always present; `isPresent` tests an optional "
            "field, parameter or value (`settledAt: datetime?`)",
        )
        return ck.poison(node)
    if not isinstance(t, ir.ListType):
        want = "a list" if param == LIST else "a list of `int`, `decimal` or `duration`"
        ck.report(
            "loom.type-mismatch",
            f"`{name}` takes {want}, not {a(t)}",
            node.span,
            f"this is {a(t)}",
            help=sample + unwrap(t),
        )
        return ck.poison(node)
    if param == NUMBERS and t.element not in _SUMMED:
        ck.report(
            "loom.type-mismatch",
            f"`{name}` adds up `int`, `decimal` or `duration` values, not the `{show(t.element)}` "
            f"elements of `{x.text}`",
            node.span,
            f"this is {a(t)}",
            help=f"{sample}; to add up a field of each element, build the list of that field "
            "in a `for` loop, or a `var` total",
        )
        return ck.poison(node)
    return x


def element(t: AnyType) -> ir.Type:
    """The type of `sum(xs)`: the element type of `xs`, keeping the scale of a `decimal(P, S)`
    (a sum has the digits after the point its elements have) but not its precision (a sum may
    outgrow it)."""
    if not isinstance(t, ir.ListType):
        return ERROR  # type: ignore[return-value]
    el = t.element
    assert isinstance(el, ir.PrimitiveType)
    return ir.PrimitiveType(el.name, scale=el.scale)


def unwrap(t: AnyType) -> str:
    """The end of a help for an optional value given where its value is needed."""
    if isinstance(t, ir.OptionalType):
        return "; an optional value is read inside `if let x = …` first"
    return ""


def stored_as_json(x: ir.BuiltinCall) -> bool:
    """Whether `isPresent` reads a stored list or value object: JSON, where an absent value is
    not SQL's NULL, so a criterion cannot test it."""
    if x.function != "isPresent" or not times.reads_field(x):
        return False
    inner = strip_optional(x.args[0].type)
    return isinstance(inner, ir.ListType) or is_record(inner)


def untranslatable_membership(x: ir.Binary) -> ir.Expr | None:
    """`x in xs` in a criterion: SQL's `IN` over a list the service binds (a parameter, a literal
    list), of a stored value, neither of them a `decimal` (whose stored text is compared as a
    number by `as_number`, which `IN` does not use). A stored list (JSON) cannot be searched."""
    if times.reads_field(x.right):
        return x
    element = x.right.type.element if isinstance(x.right.type, ir.ListType) else None
    if times.reads_field(x.left) and ir.DECIMAL in (strip_optional(x.left.type), element):
        return x
    return None


def criterion_help(bad: ir.Expr) -> str | None:
    """The help of `loom.criterion-not-translatable` for a list or absence test, or None."""
    if isinstance(bad, ir.Binary) and bad.op == "in" and times.reads_field(bad.right):
        return (
            "a list field is stored as JSON, which the database does not search: keep what "
            "is looked for in a field of its own, or filter the loaded values in a query handler"
        )
    if isinstance(bad, ir.Binary) and bad.op == "in":
        return (
            "`in` with a `decimal` on either side is not translated (a decimal is compared as a "
            "number): compare with `==` joined by `||`, or filter the loaded values in a query "
            "handler"
        )
    if isinstance(bad, ir.BuiltinCall) and bad.function == "isPresent":
        return (
            "an optional list or value object is stored as JSON, where an absent one is not "
            "SQL's NULL: keep a flag in a field of its own, or filter the loaded values in a "
            "query handler"
        )
    if isinstance(bad, ir.BuiltinCall) and bad.function in ("count", "sum"):
        return (
            f"`{bad.function}` of a stored list is computed by the service: the database holds "
            "a list as JSON. Keep the number in a field of its own, "
            "updated by the operations that change the list, or filter the loaded values in a "
            "query handler"
        )
    return None
