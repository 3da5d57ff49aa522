"""The rules of aggregates: defaults, derived values, invariants, functions and operation bodies.

The checker keeps the typed IR form of each expression in side tables keyed by the AST node, for
`lower.py` to assemble. Expression typing is in `expressions.py`; workflow bodies have their own
rules in `rules_workflow.py`.
"""

from __future__ import annotations

from loom.lang import ast, rules_anonymous, rules_factory
from loom.lang.diagnostics import Sink, did_you_mean
from loom.lang.expressions import Binding, ExpressionChecker, Scope, a
from loom.lang.resolve import ContextSymbols, Program, resolve_type
from loom.lang.types import AnyType, is_error, is_numeric, show
from loom.model import ir

__all__ = ["Binding", "Checker", "Scope", "a"]


class Checker(ExpressionChecker):
    def __init__(self, prog: Program, sink: Sink, sources: dict[str, str]) -> None:
        self.prog = prog
        self.sink = sink
        self.sources = sources
        self.types: dict[int, AnyType] = {}  # id(TypeRef) -> type
        self.exprs: dict[int, ir.Expr] = {}  # id(root ast expr) -> typed IR expression
        self.emits: dict[int, tuple[str, dict[str, ir.Expr]]] = {}  # id(Emit) -> event, args
        self.stmts: dict[int, object] = {}  # id(workflow stmt) -> what lowering needs
        self.bindings: dict[int, list[Binding]] = {}  # id(Create) -> loads/creates in order
        # id(Aggregate) -> (calling operation, called operation, call) for cycle detection
        self.own_calls: dict[int, list[tuple[str | None, str, ast.Call]]] = {}
        self.current_operation: str | None = None

    # ---- entry

    def run(self) -> None:
        from loom.lang import rules_records

        for ctx in self.prog.contexts.values():
            self._declare_types(ctx)
        for ctx in self.prog.contexts.values():
            # Value objects first: the defaults and bodies below may construct them.
            rules_records.check_records(self, ctx)
        for ctx in self.prog.contexts.values():
            for agg in ctx.aggregates.values():
                self.check_aggregate(ctx, agg)
        from loom.lang import rules_decls, rules_workflow

        for ctx in self.prog.contexts.values():
            rules_decls.check_context(self, ctx)
            for wf in ctx.workflows.values():
                rules_workflow.check_workflow(self, ctx, wf)
            for h in ctx.handlers.values():
                rules_workflow.check_handler(self, ctx, h)
            for tm in ctx.timers.values():
                rules_workflow.check_timer(self, ctx, tm)
        from loom.lang import rules_events

        for ctx in self.prog.contexts.values():
            for proj in ctx.projections.values():
                rules_events.check_projection(self, ctx, proj)
        rules_events.check_channels(self)
        from loom.lang import rules_principal

        rules_principal.check_reactor_gates(self)
        rules_anonymous.check_anonymous_gates(self)

    def _declare_types(self, ctx: ContextSymbols) -> None:
        def res(t: ast.TypeRef | None, value: bool = True) -> None:
            if t is not None:
                self.types[id(t)] = resolve_type(ctx, t, self.sink, value=value, prog=self.prog)

        for agg in ctx.aggregates.values():
            for m in agg.members:
                if isinstance(m, (ast.Field, ast.Derived)):
                    res(m.type)
                elif isinstance(m, (ast.Function, ast.Operation, ast.Factory)):
                    for p in m.params:
                        res(p.type)
                    if isinstance(m, (ast.Function, ast.Operation)):
                        res(m.result)
        for ev in ctx.events.values():
            for p in ev.fields:
                res(p.type)
        for rec in [*ctx.values.values(), *ctx.payloads.values(), *ctx.projections.values()]:
            for f in rec.fields:
                res(f.type)
        for wf in ctx.workflows.values():
            for f in wf.state:
                res(f.type)
            for fn in wf.functions:
                for p in fn.params:
                    res(p.type)
                res(fn.result)
        for d in [*ctx.criteria.values(), *ctx.retrievals.values()]:
            for p in d.params:
                res(p.type)
        for repo in ctx.repositories.values():
            for f in repo.finds:
                for p in f.params:
                    res(p.type)
                res(f.result, value=False)
        for svc in ctx.services.values():
            for m in svc.methods:
                for p in m.params:
                    res(p.type, value=False)
                res(m.result, value=False)

    # ---- helpers

    def check_aggregate(self, ctx: ContextSymbols, agg: ast.Aggregate) -> None:
        for m in agg.members:
            if isinstance(m, ast.Field) and m.default is not None:
                ft = self.type_of(m.type)
                x = self.root(m.default, Scope(ctx, agg, "default"), ft)
                self.mismatch(
                    x,
                    m.default,
                    ft,
                    f"the default of `{m.name}` is {a(x.type)}, but the field is {a(ft)}",
                    [(m.type.span, f"`{m.name}` is declared here as `{show(ft)}`")],
                )
            elif isinstance(m, ast.Derived):
                dt = self.type_of(m.type)
                x = self.root(m.value, Scope(ctx, agg, "derived"), dt)
                self.mismatch(
                    x,
                    m.value,
                    dt,
                    f"derived `{m.name}` is declared {a(dt)} but its value is {a(x.type)}",
                    [(m.type.span, "declared type")],
                )
            elif isinstance(m, ast.Invariant):
                self.exprs[id(m.condition)] = self.condition(
                    m.condition, Scope(ctx, agg, "invariant"), "an invariant"
                )
            elif isinstance(m, ast.Function):
                scope = self._params_scope(ctx, agg, "function", m.params)
                scope.block = m.body is not None
                self.function_body(m, scope)
            elif isinstance(m, ast.Operation):
                self.check_operation(ctx, agg, m)
            elif isinstance(m, ast.Factory):
                scope = self._params_scope(ctx, agg, "factory", m.params)
                rules_factory.check_factory(self, m, scope)
        self.check_cycles(agg)
        self.check_operation_cycles(agg)

    def function_body(self, m: ast.Function, scope: Scope) -> None:
        """A pure function, either form: `= expr`, or `{ let … precondition … return e }`."""
        rt = self.type_of(m.result)
        if m.value is not None:
            x = self.root(m.value, scope, rt)
            self.mismatch(
                x,
                m.value,
                rt,
                f"function `{m.name}` returns {a(rt)}, but its value is {a(x.type)}",
                [(m.result.span, "declared result type")],
            )
            return
        body = m.body or []
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Return):
                x = self.root(stmt.value, scope, rt)
                self.mismatch(
                    x,
                    stmt.value,
                    rt,
                    f"function `{m.name}` returns {a(rt)}, but this value is {a(x.type)}",
                    [(m.result.span, "declared result type")],
                )
                if i != len(body) - 1:
                    self.report(
                        "loom.unreachable-statement",
                        "this statement comes after `return` and never runs",
                        body[i + 1].span,
                        "unreachable",
                        help="move it before the `return`, or remove it",
                    )
            elif isinstance(
                stmt,
                (ast.Let, ast.Precondition, ast.NotFound, ast.Schedule, ast.Cancel, ast.Complete),
            ):
                self.operation_stmt(stmt, scope)
            elif isinstance(stmt, ast.If):
                self.report(
                    "loom.invalid-statement",
                    "a function body has no `if`: it computes one value",
                    stmt.span,
                    "`if` in a function",
                    help="choose between values with `cond ? a : b`",
                )
            else:
                what = {
                    ast.Assign: "assign",
                    ast.Emit: "emit an event",
                }.get(type(stmt), "call an operation, a repository, a service or an extern")
                if isinstance(stmt, ast.ExprStmt):
                    before = len(self.sink.items)
                    self.expr(stmt.expr, scope)
                    if any(
                        d.code == "loom.function-block-impure" for d in self.sink.items[before:]
                    ):
                        continue  # the call itself was reported
                self.report(
                    "loom.function-block-impure",
                    f"a function is pure, so its body cannot {what}",
                    stmt.span,
                    "a side effect",
                    help="a function body has `let`, `precondition` and a final `return`; change "
                    "state in an operation",
                )
        if not body or not isinstance(body[-1], ast.Return):
            self.report(
                "loom.function-missing-return",
                f"function `{m.name}` does not end in `return`",
                m.name_span,
                "no final `return`",
                help="end the body with `return <value>`",
            )
        self.warn_unused(scope)

    def check_cycles(self, agg: ast.Aggregate) -> None:
        """Derived values and functions are evaluated on every read; a cycle would never end."""
        decls: dict[str, ast.Derived | ast.Function] = {}
        deps: dict[str, list[str]] = {}
        for m in agg.members:
            if isinstance(m, (ast.Derived, ast.Function)) and id(m.value) in self.exprs:
                decls.setdefault(m.name, m)
                deps.setdefault(m.name, list(_references(self.exprs[id(m.value)])))
        done: set[str] = set()

        def visit(name: str, path: list[str]) -> None:
            if name in path:
                cycle = path[path.index(name) :] + [name]
                first = decls[cycle[0]]
                self.report(
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

    def _params_scope(
        self, ctx: ContextSymbols, agg: ast.Aggregate | None, kind: str, params: list[ast.Param]
    ) -> Scope:
        scope = Scope(ctx, agg, kind)
        for p in params:
            scope.names.setdefault(
                p.name, Binding(p.name, self.type_of(p.type), p.name_span, "param")
            )
        return scope

    def check_operation(self, ctx: ContextSymbols, agg: ast.Aggregate, op: ast.Operation) -> None:
        if op.requires is not None:
            gate = self._params_scope(ctx, agg, "requires", op.params)
            self.exprs[id(op.requires)] = self.condition(op.requires, gate, "a `requires` gate")
        if op.extern:
            if op.has_body:
                self.report(
                    "loom.extern-has-body",
                    f"extern operation `{op.name}` has a body, but its code is the user's Python",
                    op.name_span,
                    "extern with a body",
                    help="remove the body, or remove `extern` to write it in Loom",
                )
            return
        scope = self._params_scope(ctx, agg, "operation", op.params)
        if op.when is not None:
            state_gate = self._params_scope(ctx, agg, "when", op.params)
            self.exprs[id(op.when)] = self.condition(op.when, state_gate, "a `when` gate")
        self.current_operation = op.name
        for stmt in op.body:
            self.operation_stmt(stmt, scope)
        self.current_operation = None
        self.warn_unused(scope)

    def warn_unused(self, scope: Scope) -> None:
        for b in scope.names.values():
            if b.kind == "value" and not b.used and not b.name.startswith("_"):
                self.report(
                    "loom.unused-local",
                    f"`{b.name}` is never used",
                    b.span,
                    "assigned but never read",
                    help="remove the `let`, use the value, or start its name with `_`",
                )

    def bind_local(self, scope: Scope, b: Binding) -> None:
        prev = scope.names.get(b.name)
        if prev is not None:
            what = "parameter" if prev.kind == "param" else "local"
            self.report(
                "loom.duplicate-declaration",
                f"`{b.name}` is already a {what} here",
                b.span,
                "declared again here",
                secondary=[(prev.span, "first declared here")],
                help="choose another name: bindings cannot be redeclared or shadowed",
            )
            return
        scope.names[b.name] = b

    def operation_stmt(self, stmt: ast.Stmt, scope: Scope) -> None:
        if isinstance(stmt, ast.Precondition):
            self.exprs[id(stmt.condition)] = self.condition(stmt.condition, scope, "a precondition")
        elif isinstance(stmt, ast.If) and scope.kind == "operation":
            # `if c { … } else { … }` in an operation: each branch a block of its own
            self.exprs[id(stmt.condition)] = self.condition(
                stmt.condition, scope, "the condition of `if`"
            )
            for branch in (stmt.then, stmt.otherwise):
                if branch is None:
                    continue
                inner = scope.child()
                for s in branch:
                    self.operation_stmt(s, inner)
                own = Scope(inner.ctx, inner.agg, inner.kind)
                own.names = {n: b for n, b in inner.names.items() if scope.names.get(n) is not b}
                self.warn_unused(own)
        elif isinstance(stmt, ast.Let):
            from loom.lang.rules_filters import refuse_outside_body

            refuse_outside_body(self, stmt)
            x = self.root(stmt.value, scope)
            self.bind_local(
                scope, Binding(stmt.name, x.type, stmt.name_span, "value", used=is_error(x.type))
            )
        elif isinstance(stmt, ast.Assign):
            self.operation_assign(stmt, scope)
        elif isinstance(stmt, ast.Emit):
            self.check_emit(stmt, scope)
        elif isinstance(stmt, ast.NotFound):
            where = {"factory": "a `create` factory", "function": "a function"}
            from loom.lang.rules_body import notfound_outside

            notfound_outside(self, stmt, where.get(scope.kind, "an operation"))
        elif isinstance(stmt, (ast.Schedule, ast.Cancel, ast.Complete)):
            from loom.lang.rules_body import timeout_stmt

            timeout_stmt(self, stmt, scope)
        elif isinstance(stmt, ast.Return):
            self.report(
                "loom.invalid-statement",
                "an operation cannot `return` a value",
                stmt.span,
                "not allowed in an operation",
                help="an operation changes its aggregate; read the result back from it, "
                "or compute it with a `function`",
            )
        elif self._own_operation_call(stmt, scope):
            return
        else:
            self.report(
                "loom.invalid-statement",
                "this statement has no effect in an operation",
                stmt.span,
                "not an assignment, `let`, `emit` or `precondition`",
                help="an operation body assigns fields (`x := e`), names values, checks "
                "preconditions, emits events and calls the aggregate's other operations "
                "(`other(args)`)",
            )

    def _own_operation_call(self, stmt: ast.Stmt, scope: Scope) -> bool:
        """`other(args)` in an operation (not a factory or function) runs another operation of
        the same aggregate. True when `stmt` is such a call (reported or recorded)."""
        if scope.kind != "operation" or scope.agg is None or not isinstance(stmt, ast.ExprStmt):
            return False
        call = stmt.expr
        if not isinstance(call, ast.Call) or not isinstance(call.callee, ast.Name):
            return False
        name = call.callee.name
        if name in scope.names:
            return False
        op = next(
            (m for m in scope.agg.members if isinstance(m, ast.Operation) and m.name == name),
            None,
        )
        if op is None:
            return False
        if op.extern:
            self.report(
                "loom.invalid-statement",
                f"`{name}` is an extern operation: its Python runs through the extern handler, "
                "which an operation body cannot reach",
                call.callee.span,
                "extern operation",
                secondary=[(op.name_span, "declared `extern` here")],
                help="call it from a workflow or a commandHandler instead",
            )
            return True
        args = self.check_args(call, scope, op.params, f"operation `{name}`", op.name_span)
        self.stmts[id(stmt)] = ("own-operation", name, args)
        self.own_calls.setdefault(id(scope.agg), []).append((self.current_operation, name, call))
        return True

    def check_operation_cycles(self, agg: ast.Aggregate) -> None:
        """Operations calling each other in a circle would recurse until the stack runs out."""
        calls = self.own_calls.get(id(agg), [])
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
                self.report(
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

    def operation_assign(self, stmt: ast.Assign, scope: Scope) -> None:
        assert scope.agg is not None
        agg = scope.agg
        target = stmt.target
        value_expected: AnyType | None = None
        if not isinstance(target, ast.Name):
            self.report(
                "loom.assign-to-readonly",
                "an operation assigns only its own aggregate's fields",
                target.span,
                "not a field of this aggregate",
                help="write the field name on its own, e.g. `status := Confirmed`",
            )
            self.root(stmt.value, scope)
            return
        name = target.name
        # The target of `:=` is always a field, so `operation rename(name: string) { name := name }`
        # assigns the field from the parameter; a binding is only an error when no field matches.
        members = self.fields_of(scope.ctx, agg.name)
        binding = scope.names.get(name)
        decl = next(
            (m for m in agg.members if isinstance(m, (ast.Field, ast.Derived)) and m.name == name),
            None,
        )
        if name == "id":
            self.report(
                "loom.assign-to-readonly",
                "cannot assign `id`: an aggregate's identity never changes",
                target.span,
                "read-only",
                help="create another aggregate instead",
            )
        elif isinstance(decl, ast.Derived):
            self.report(
                "loom.assign-to-readonly",
                f"cannot assign `{name}`: it is derived",
                target.span,
                "a derived value",
                secondary=[(decl.name_span, "derived here")],
                help="assign the fields it is computed from",
            )
        elif isinstance(decl, ast.Field) and decl.immutable and scope.kind != "factory":
            self.report(
                "loom.immutable-field-assign",
                f"cannot assign `{name}`: the field is immutable",
                target.span,
                "immutable field",
                secondary=[(decl.span, "declared `immutable` here")],
                help="remove `immutable` from the field if it must change",
            )
        elif isinstance(decl, ast.Field):
            value_expected = self.type_of(decl.type)
        elif binding is not None:
            what = "a parameter" if binding.kind == "param" else "a local value"
            self.report(
                "loom.assign-to-readonly",
                f"cannot assign `{name}`: it is {what}",
                target.span,
                "not a field",
                secondary=[(binding.span, "declared here")],
                help="only the aggregate's fields can be assigned; use a new `let` for a new value",
            )
        else:
            self.report(
                "loom.unknown-field",
                f"aggregate `{agg.name}` has no field `{name}`",
                target.span,
                "unknown field",
                help=did_you_mean(name, [n for n, v in members.items() if v[0] == "field"]),
            )
        x = self.root(stmt.value, scope, value_expected)
        if value_expected is None or not isinstance(decl, ast.Field):
            return
        compound = stmt.op in ("+=", "-=")
        if compound and scope.kind == "factory":
            self.report(
                "loom.invalid-statement",
                f"a `create` sets fields with `:=`; `{stmt.op}` has nothing to add to yet",
                stmt.span,
                "compound assignment in a factory",
                help=f"write `{name} := …` with the initial value",
            )
            return
        if compound and not is_error(value_expected) and not is_numeric(value_expected):
            self.report(
                "loom.compound-assign-type",
                f"`{stmt.op}` needs a numeric field, but `{name}` is {a(value_expected)}",
                target.span,
                f"{a(value_expected)} field",
                secondary=[(decl.type.span, "declared type")],
                help=f"write `{name} := …` with the new value instead",
            )
            return
        self.mismatch(
            x,
            stmt.value,
            value_expected,
            f"cannot assign {a(x.type)} to `{name}`, {a(value_expected)} field",
            [(decl.name_span, f"`{name}` is declared here as `{show(value_expected)}`")],
        )

    # ---- emit (operations and workflows)

    def check_emit(self, stmt: ast.Emit, scope: Scope) -> None:
        ev = scope.ctx.events.get(stmt.event)
        if ev is None:
            self.report(
                "loom.unknown-event",
                f"unknown event `{stmt.event}` in context `{scope.ctx.name}`",
                stmt.event_span,
                "not an event",
                help=did_you_mean(stmt.event, scope.ctx.events)
                or f"declare it: `event {stmt.event} {{ … }}`",
            )
            for entry in stmt.fields:
                self.expr(entry.value, scope)
            return
        decls = {p.name: p for p in ev.fields}
        given: dict[str, ast.Arg] = {}
        args: dict[str, ir.Expr] = {}
        for entry in stmt.fields:
            assert entry.name is not None and entry.name_span is not None
            p = decls.get(entry.name)
            if entry.name in given:
                self.report(
                    "loom.emit-fields",
                    f"field `{entry.name}` of `{ev.name}` is given twice",
                    entry.name_span,
                    "given again here",
                    secondary=[(given[entry.name].span, "first given here")],
                    help="give each field once",
                )
                self.expr(entry.value, scope)
                continue
            given[entry.name] = entry
            if p is None:
                self.report(
                    "loom.emit-fields",
                    f"event `{ev.name}` has no field `{entry.name}`",
                    entry.name_span,
                    "unknown field",
                    help=did_you_mean(entry.name, decls)
                    or f"its fields are {', '.join(f'`{n}`' for n in decls) or 'none'}",
                )
                self.expr(entry.value, scope)
                continue
            pt = self.type_of(p.type)
            x = self.expr(entry.value, scope, pt)
            self.mismatch(
                x,
                entry.value,
                pt,
                f"field `{p.name}` of `{ev.name}` is {a(pt)}, but this value is {a(x.type)}",
                [(p.span, "declared here")],
            )
            args[p.name] = x
        missing = [n for n in decls if n not in given]
        if missing:
            listed = ", ".join(f"`{n}`" for n in missing)
            self.report(
                "loom.emit-fields",
                f"`emit {ev.name}` leaves out {listed}",
                stmt.event_span,
                f"missing {listed}",
                secondary=[(ev.name_span, "event declared here")],
                help="an emit gives every field of the event",
            )
        self.emits[id(stmt)] = (ev.name, args)


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
