"""The statements of an aggregate's operations, factory and functions (and the ones a domain service
method shares with them): assignments of the aggregate's own fields, `let`, `precondition`, `if`,
`emit`, and calls of the aggregate's other operations.
"""

from __future__ import annotations

from loom.lang.check import bodies, emits, filters
from loom.lang.check.checker import Checker
from loom.lang.check.facts import OwnCall
from loom.lang.check.scope import Binding, Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.syntax import ast
from loom.lang.types import AnyType, a, is_error, is_numeric, show


def function_body(ck: Checker, m: ast.Function, scope: Scope) -> None:
    """A pure function, either form: `= expr`, or `{ let … precondition … return e }`."""
    rt = ck.type_of(m.result)
    if m.value is not None:
        x = ck.root(m.value, scope, rt)
        ck.mismatch(
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
            x = ck.root(stmt.value, scope, rt)
            ck.mismatch(
                x,
                stmt.value,
                rt,
                f"function `{m.name}` returns {a(rt)}, but this value is {a(x.type)}",
                [(m.result.span, "declared result type")],
            )
            if i != len(body) - 1:
                ck.report(
                    "loom.unreachable-statement",
                    "this statement comes after `return` and never runs",
                    body[i + 1].span,
                    "unreachable",
                    help="move it before the `return`, or remove it",
                )
        elif isinstance(
            stmt,
            (
                ast.Let,
                ast.Var,
                ast.Precondition,
                ast.NotFound,
                ast.Schedule,
                ast.Cancel,
                ast.Complete,
            ),
        ):
            operation_stmt(ck, stmt, scope)
        elif isinstance(stmt, ast.If):
            ck.report(
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
                before = len(ck.sink.items)
                ck.expr(stmt.expr, scope)
                if any(d.code == "loom.function-block-impure" for d in ck.sink.items[before:]):
                    continue  # the call itself was reported
            ck.report(
                "loom.function-block-impure",
                f"a function is pure, so its body cannot {what}",
                stmt.span,
                "a side effect",
                help="a function body has `let`, `precondition` and a final `return`; change "
                "state in an operation",
            )
    if not body or not isinstance(body[-1], ast.Return):
        ck.report(
            "loom.function-missing-return",
            f"function `{m.name}` does not end in `return`",
            m.name_span,
            "no final `return`",
            help="end the body with `return <value>`",
        )
    ck.warn_unused(scope)


def operation_stmt(ck: Checker, stmt: ast.Stmt, scope: Scope) -> None:
    if isinstance(stmt, ast.Precondition):
        ck.facts.exprs[stmt.condition] = ck.condition(stmt.condition, scope, "a precondition")
    elif isinstance(stmt, ast.If) and scope.kind == "operation":
        # `if c { … } else { … }` in an operation: each branch a block of its own
        ck.facts.exprs[stmt.condition] = ck.condition(
            stmt.condition, scope, "the condition of `if`"
        )
        for branch in (stmt.then, stmt.otherwise):
            if branch is None:
                continue
            inner = scope.child()
            for s in branch:
                operation_stmt(ck, s, inner)
            own = Scope(inner.ctx, inner.agg, inner.kind)
            own.names = {n: b for n, b in inner.names.items() if scope.names.get(n) is not b}
            ck.warn_unused(own)
    elif isinstance(stmt, ast.Let):
        filters.refuse_outside_body(ck, stmt)
        x = ck.root(stmt.value, scope)
        ck.bind_local(
            scope, Binding(stmt.name, x.type, stmt.name_span, "value", used=is_error(x.type))
        )
    elif isinstance(stmt, ast.Var):
        where = {"factory": "a `create` factory", "function": "a function"}
        ck.report(
            "loom.invalid-statement",
            f"{where.get(scope.kind, 'an operation')} has no `var`: only workflow and handler "
            "bodies reassign their own values",
            stmt.span,
            "`var` here",
            help="name the value with `let` (choose between values with `cond ? a : b`)"
            + ("" if scope.kind == "function" else "; `:=` assigns the aggregate's fields"),
        )
        x = ck.root(stmt.value, scope)  # still bound: its uses are no second mistake
        ck.bind_local(scope, Binding(stmt.name, x.type, stmt.name_span, "value", used=True))
    elif isinstance(stmt, ast.Assign):
        _assign(ck, stmt, scope)
    elif isinstance(stmt, ast.Emit):
        emits.check_emit(ck, stmt, scope)
    elif isinstance(stmt, ast.NotFound):
        where = {"factory": "a `create` factory", "function": "a function"}
        bodies.notfound_outside(ck, stmt, where.get(scope.kind, "an operation"))
    elif isinstance(stmt, (ast.Schedule, ast.Cancel, ast.Complete)):
        bodies.timeout_stmt(ck, stmt, scope)
    elif isinstance(stmt, ast.Return):
        ck.report(
            "loom.invalid-statement",
            "an operation cannot `return` a value",
            stmt.span,
            "not allowed in an operation",
            help="an operation changes its aggregate; read the result back from it, "
            "or compute it with a `function`",
        )
    elif _own_operation_call(ck, stmt, scope):
        return
    else:
        ck.report(
            "loom.invalid-statement",
            "this statement has no effect in an operation",
            stmt.span,
            "not an assignment, `let`, `emit` or `precondition`",
            help="an operation body assigns fields (`x := e`), names values, checks "
            "preconditions, emits events and calls the aggregate's other operations "
            "(`other(args)`)",
        )


def _own_operation_call(ck: Checker, stmt: ast.Stmt, scope: Scope) -> bool:
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
    ck.refer(call.callee.span, op.name_span)
    if op.extern:
        ck.report(
            "loom.invalid-statement",
            f"`{name}` is an extern operation: its Python runs through the extern handler, "
            "which an operation body cannot reach",
            call.callee.span,
            "extern operation",
            secondary=[(op.name_span, "declared `extern` here")],
            help="call it from a workflow or a commandHandler instead",
        )
        return True
    args = ck.check_args(call, scope, op.params, f"operation `{name}`", op.name_span)
    ck.facts.stmts[stmt] = OwnCall(name, args)
    ck.own_calls.setdefault(scope.agg, []).append((ck.current_operation, name, call))
    return True


def _assign(ck: Checker, stmt: ast.Assign, scope: Scope) -> None:
    assert scope.agg is not None
    agg = scope.agg
    target = stmt.target
    value_expected: AnyType | None = None
    if not isinstance(target, ast.Name):
        ck.report(
            "loom.assign-to-readonly",
            "an operation assigns only its own aggregate's fields",
            target.span,
            "not a field of this aggregate",
            help="write the field name on its own, e.g. `status := Confirmed`",
        )
        ck.root(stmt.value, scope)
        return
    name = target.name
    # The target of `:=` is always a field, so `operation rename(name: string) { name := name }`
    # assigns the field from the parameter; a binding is only an error when no field matches.
    members = ck.fields_of(scope.ctx, agg.name)
    binding = scope.names.get(name)
    decl = next(
        (m for m in agg.members if isinstance(m, (ast.Field, ast.Derived)) and m.name == name),
        None,
    )
    if decl is not None:
        ck.refer(target.span, decl.name_span)
    if name == "id":
        ck.report(
            "loom.assign-to-readonly",
            "cannot assign `id`: an aggregate's identity never changes",
            target.span,
            "read-only",
            help="create another aggregate instead",
        )
    elif isinstance(decl, ast.Derived):
        ck.report(
            "loom.assign-to-readonly",
            f"cannot assign `{name}`: it is derived",
            target.span,
            "a derived value",
            secondary=[(decl.name_span, "derived here")],
            help="assign the fields it is computed from",
        )
    elif isinstance(decl, ast.Field) and decl.immutable and scope.kind != "factory":
        ck.report(
            "loom.immutable-field-assign",
            f"cannot assign `{name}`: the field is immutable",
            target.span,
            "immutable field",
            secondary=[(decl.span, "declared `immutable` here")],
            help="remove `immutable` from the field if it must change",
        )
    elif isinstance(decl, ast.Field):
        value_expected = ck.type_of(decl.type)
    elif binding is not None:
        what = "a parameter" if binding.kind == "param" else "a local value"
        ck.report(
            "loom.assign-to-readonly",
            f"cannot assign `{name}`: it is {what}",
            target.span,
            "not a field",
            secondary=[(binding.span, "declared here")],
            help="only the aggregate's fields can be assigned; name a new value with a new `let`",
        )
    else:
        ck.report(
            "loom.unknown-field",
            f"aggregate `{agg.name}` has no field `{name}`",
            target.span,
            "unknown field",
            help=did_you_mean(name, [n for n, v in members.items() if v[0] == "field"]),
        )
    x = ck.root(stmt.value, scope, value_expected)
    if value_expected is None or not isinstance(decl, ast.Field):
        return
    compound = stmt.op in ("+=", "-=")
    if compound and scope.kind == "factory":
        ck.report(
            "loom.invalid-statement",
            f"a `create` sets fields with `:=`; `{stmt.op}` has nothing to add to yet",
            stmt.span,
            "compound assignment in a factory",
            help=f"write `{name} := …` with the initial value",
        )
        return
    if compound and not is_error(value_expected) and not is_numeric(value_expected):
        ck.report(
            "loom.compound-assign-type",
            f"`{stmt.op}` needs a numeric field, but `{name}` is {a(value_expected)}",
            target.span,
            f"{a(value_expected)} field",
            secondary=[(decl.type.span, "declared type")],
            help=f"write `{name} := …` with the new value instead",
        )
        return
    ck.mismatch(
        x,
        stmt.value,
        value_expected,
        f"cannot assign {a(x.type)} to `{name}`, {a(value_expected)} field",
        [(decl.name_span, f"`{name}` is declared here as `{show(value_expected)}`")],
    )
