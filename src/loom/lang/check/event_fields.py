"""Defaults of event fields: typed as an aggregate field's default is, and constant, because a stored
event written before the field existed decodes to that one value (and an `emit` that leaves the
field out gives it)."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import a, is_error, show
from loom.model import ir


def check_event_defaults(ck: Checker, ctx: ContextSymbols) -> None:
    for ev in ctx.events.values():
        for f in ev.fields:
            if f.default is not None:
                _default(ck, ctx, ev, f, f.default)


def _default(
    ck: Checker, ctx: ContextSymbols, ev: ast.Event, f: ast.Field, default: ast.Expr
) -> None:
    ft = ck.type_of(f.type)
    x = ck.root(default, Scope(ctx, None, "default"), ft)
    fits = ck.mismatch(
        x,
        default,
        ft,
        f"the default of `{f.name}` is {a(x.type)}, but the field is {a(ft)}",
        [(f.type.span, f"`{f.name}` is declared here as `{show(ft)}`")],
    )
    if fits and not is_error(x.type) and not is_constant(x):
        ck.report(
            "loom.event-default-not-constant",
            f"the default of the event field `{ev.name}.{f.name}` is not a constant",
            default.span,
            "computed when it is used",
            secondary=[(f.name_span, "event field declared here")],
            help='give a literal (`"web"`, `0`, `1.50`, `true`, `[]`), an enum member or a '
            "value of constants; an event stored before the field existed decodes to this one "
            "value, so it cannot depend on when it is read (for `now()`, give the field in each "
            "`emit` instead)",
        )


def is_constant(x: ir.Expr) -> bool:
    """A value that is the same wherever and whenever it is evaluated."""
    if isinstance(x, ir.Literal_ | ir.EnumMember):
        return True
    if isinstance(x, ir.Unary):
        return x.op == "-" and isinstance(x.operand, ir.Literal_)
    if isinstance(x, ir.ListLiteral):
        return all(is_constant(i) for i in x.items)
    if isinstance(x, ir.Construct):
        return all(arg.value is None or is_constant(arg.value) for arg in x.args)
    return False
