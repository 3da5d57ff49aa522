"""`var` bindings of workflow and handler bodies: `var x = e` (or `var x: T = e`), then `x := e`
anywhere after it in the body, a branch or a `for` loop included, which is how a body builds a
list or a sum over a loop. A `let` never changes; a `var` keeps the type it was declared with
(the annotation, else its first value's), and it never holds an aggregate: saves follow the
`let` that bound an aggregate, and a reassigned name would lose that track.
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.facts import LocalWrite
from loom.lang.check.scope import Binding, Scope
from loom.lang.names.type_refs import resolve_type
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, a, is_error, show, strip_optional
from loom.model import ir

# the bodies a `var` may be declared in: those of workflows (but `apply`) and handlers, and timers
BODIES = ("create", "command", "query", "starter", "on", "timeout", "timer")


def body_name(scope: Scope) -> str:
    """What the body is called in a message: `a workflow`, `a queryHandler`, `a timer`."""
    if scope.wf is not None:
        return "a workflow"
    return {"command": "a commandHandler", "query": "a queryHandler"}.get(scope.body, "a timer")


def declare(ck: Checker, stmt: ast.Var, scope: Scope) -> None:
    declared = _declared_type(ck, stmt, scope)
    if scope.body not in BODIES:
        ck.report(
            "loom.invalid-statement",
            "an `apply` clause has no `var`: it only folds the event into the state",
            stmt.span,
            "`var` in `apply`",
            help="assign state fields (`total := total + e.amount`); name values with `let`",
        )
    t: AnyType
    if declared is None and isinstance(stmt.value, ast.ListLit) and not stmt.value.items:
        ck.report(
            "loom.cannot-infer-type",
            f"cannot tell the element type of `[]`, the starting value of `{stmt.name}`",
            stmt.value.span,
            "empty list",
            help=f"declare the type of the var: `var {stmt.name}: T[] = []` (a payload, a value "
            "object, `string`, …)",
        )
        t = ERROR
        x = ck.poison(stmt.value)
    else:
        x = ck.root(stmt.value, scope, declared)
        t = declared if declared is not None else x.type
        if declared is not None:
            ck.mismatch(
                x,
                stmt.value,
                declared,
                f"`{stmt.name}` is declared {a(declared)}, but its starting value is {a(x.type)}",
                [(stmt.type.span, "declared type")] if stmt.type is not None else None,
            )
        if isinstance(t, ir.VoidType):
            t = ERROR
        elif _holds_whole(t):
            _refuse_whole(ck, stmt, t)
            t = ERROR
    ck.facts.stmts[stmt] = LocalWrite(stmt.name, t, x)
    ck.bind_local(scope, Binding(stmt.name, t, stmt.name_span, "var", used=is_error(t)))


def _declared_type(ck: Checker, stmt: ast.Var, scope: Scope) -> AnyType | None:
    if stmt.type is None:
        return None
    # payloads are values of a body (it builds responses); aggregates are judged below
    t = resolve_type(scope.ctx, stmt.type, ck.sink, value=False, prog=ck.prog, payloads=True)
    ck.facts.types[stmt.type] = t
    if _holds_whole(t):
        _refuse_whole(ck, stmt, t)
        return ERROR
    return t


def _holds_whole(t: AnyType) -> bool:
    """An aggregate or an event itself (or optional), not a list of them nor an id."""
    return isinstance(strip_optional(t), (ir.AggregateType, ir.EventType))


def _refuse_whole(ck: Checker, stmt: ast.Var, t: AnyType) -> None:
    span = stmt.type.span if stmt.type is not None else stmt.value.span
    ck.report(
        "loom.invalid-type-use",
        f"`var {stmt.name}` would hold {a(t)}, a whole aggregate or event: a `var` holds values",
        span,
        f"{a(t)} here",
        help="bind an aggregate with `let` (that is what its save follows), or keep its id: "
        f"`var {stmt.name} = x.id`",
    )


def reassign(ck: Checker, stmt: ast.Assign, target: ast.Name, b: Binding, scope: Scope) -> None:
    """`x := e` on a `var`: the value must fit the var's type."""
    x = ck.root(stmt.value, scope, None if is_error(b.type) else b.type)
    ck.mismatch(
        x,
        stmt.value,
        b.type,
        f"cannot assign {a(x.type)} to `{target.name}`, {a(b.type)} var",
        [(b.span, f"`{target.name}` is declared here as `{show(b.type)}`")],
        help=_widen_help(b, x.type),
    )
    ck.facts.stmts[stmt] = LocalWrite(target.name, b.type, x)


def _widen_help(b: Binding, value: AnyType) -> str | None:
    if value == ir.DECIMAL and b.type == ir.INT:
        return f"declare it a decimal from the start: `var {b.name}: decimal = 0`"
    if isinstance(b.type, ir.ListType) and not isinstance(value, ir.ListType):
        return f"`+` joins two lists: wrap the element, `{b.name} := {b.name} + [x]`"
    return None
