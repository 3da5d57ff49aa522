"""The rules of aggregates: defaults, derived values, invariants, functions and operation bodies.

The statements of operations, factories and functions are checked in `operations.py`; expression
typing is in `expressions.py`; workflow bodies have their own rules in `workflows.py`.
"""

from __future__ import annotations

from loom.lang.check import factories, operations
from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import a, show
from loom.model import ir


def check_aggregate(ck: Checker, ctx: ContextSymbols, agg: ast.Aggregate) -> None:
    for m in agg.members:
        if isinstance(m, ast.Field) and m.default is not None:
            ft = ck.type_of(m.type)
            x = ck.root(m.default, Scope(ctx, agg, "default"), ft)
            ck.mismatch(
                x,
                m.default,
                ft,
                f"the default of `{m.name}` is {a(x.type)}, but the field is {a(ft)}",
                [(m.type.span, f"`{m.name}` is declared here as `{show(ft)}`")],
            )
        elif isinstance(m, ast.Derived):
            dt = ck.type_of(m.type)
            x = ck.root(m.value, Scope(ctx, agg, "derived"), dt)
            ck.mismatch(
                x,
                m.value,
                dt,
                f"derived `{m.name}` is declared {a(dt)} but its value is {a(x.type)}",
                [(m.type.span, "declared type")],
            )
        elif isinstance(m, ast.Invariant):
            ck.facts.exprs[m.condition] = ck.condition(
                m.condition, Scope(ctx, agg, "invariant"), "an invariant"
            )
        elif isinstance(m, ast.Function):
            scope = ck.params_scope(ctx, agg, "function", m.params)
            scope.block = m.body is not None
            operations.function_body(ck, m, scope)
        elif isinstance(m, ast.Operation):
            _check_operation(ck, ctx, agg, m)
        elif isinstance(m, ast.Factory):
            scope = ck.params_scope(ctx, agg, "factory", m.params)
            factories.check_factory(ck, m, scope)
    _check_cycles(ck, agg)
    _check_operation_cycles(ck, agg)


def _check_cycles(ck: Checker, agg: ast.Aggregate) -> None:
    """Derived values and functions are evaluated on every read; a cycle would never end."""
    decls: dict[str, ast.Derived | ast.Function] = {}
    deps: dict[str, list[str]] = {}
    for m in agg.members:
        if isinstance(m, (ast.Derived, ast.Function)) and m.value in ck.facts.exprs:
            decls.setdefault(m.name, m)
            deps.setdefault(m.name, list(_references(ck.facts.exprs[m.value])))
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name) :] + [name]
            first = decls[cycle[0]]
            ck.report(
                "loom.cyclic-definition",
                f"`{cycle[0]}` depends on itself: " + " → ".join(f"`{n}`" for n in cycle),
                first.name_span,
                "defined in terms of itself",
                secondary=[
                    (decls[n].name_span, f"`{n}` is part of the cycle")
                    for n in dict.fromkeys(cycle[1:-1])
                ],
                help="compute it from fields and parameters, without going back to itself",
            )
            done.update(cycle)
            return
        if name in done or name not in deps:
            return
        for dep in deps[name]:
            visit(dep, [*path, name])
            if name in done:
                return
        done.add(name)

    for name in deps:
        visit(name, [])


def _check_operation(
    ck: Checker, ctx: ContextSymbols, agg: ast.Aggregate, op: ast.Operation
) -> None:
    if op.requires is not None:
        gate = ck.params_scope(ctx, agg, "requires", op.params)
        ck.facts.exprs[op.requires] = ck.condition(op.requires, gate, "a `requires` gate")
    if op.extern:
        if op.has_body:
            ck.report(
                "loom.extern-has-body",
                f"extern operation `{op.name}` has a body, but its code is the user's Python",
                op.name_span,
                "extern with a body",
                help="remove the body, or remove `extern` to write it in Loom",
            )
        return
    scope = ck.params_scope(ctx, agg, "operation", op.params)
    if op.when is not None:
        state_gate = ck.params_scope(ctx, agg, "when", op.params)
        ck.facts.exprs[op.when] = ck.condition(op.when, state_gate, "a `when` gate")
    ck.current_operation = op.name
    for stmt in op.body:
        operations.operation_stmt(ck, stmt, scope)
    ck.current_operation = None
    ck.warn_unused(scope)


def _check_operation_cycles(ck: Checker, agg: ast.Aggregate) -> None:
    """Operations calling each other in a circle would recurse until the stack runs out."""
    calls = ck.own_calls.get(agg, [])
    graph: dict[str, list[tuple[str, ast.Call]]] = {}
    for caller, callee, node in calls:
        if caller is not None:
            graph.setdefault(caller, []).append((callee, node))
    reported: set[frozenset[str]] = set()

    def visit(name: str, names: list[str], calls: list[ast.Call]) -> None:
        # calls[i] is the call from names[i] to the next name on the path
        if name in names:
            at = names.index(name)
            circle, spans = names[at:], calls[at:]
            if frozenset(circle) in reported:
                return
            reported.add(frozenset(circle))
            loop = " → ".join(f"`{n}`" for n in [*circle, name])
            ck.report(
                "loom.cyclic-definition",
                f"operation `{circle[0]}` calls itself: {loop}",
                spans[0].span,
                "this call starts the circle",
                secondary=[(c.span, "part of the circle") for c in spans[1:]],
                help="move the shared steps into one operation, or break the circle",
            )
            return
        for callee, node in graph.get(name, []):
            visit(callee, [*names, name], [*calls, node])

    for start in graph:
        visit(start, [], [])


def _references(x: ir.Expr) -> list[str]:
    """Derived values and functions of the same aggregate that an expression reads, in order."""
    out: list[str] = []
    stack: list[object] = [x]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.SelfField) and e.kind == "derived":
            out.append(e.name)
        elif isinstance(e, ir.FunctionCall):
            out.append(e.function)
            stack.extend(reversed(e.args))
        elif isinstance(e, ir.Unary):
            stack.append(e.operand)
        elif isinstance(e, ir.Binary):
            stack.extend((e.right, e.left))
        elif isinstance(e, ir.Conditional):
            stack.extend((e.otherwise, e.then, e.condition))
        elif isinstance(e, ir.ListLiteral):
            stack.extend(reversed(e.items))
        elif isinstance(e, ir.Construct):
            stack.extend(reversed([a.value for a in e.args if a.value is not None]))
        elif isinstance(e, ir.Member):
            stack.append(e.obj)
    return out
