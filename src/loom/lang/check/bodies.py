"""Statements of workflow and handler bodies (create, commandHandler, queryHandler, apply).

A body only orchestrates: it reads, creates, calls operations and mutating domain services as
statements, branches with `if let`, loops with `for`, deletes, assigns the workflow's own state
and its `var`s (variables.py), emits, checks preconditions, ends in `notFound` or returns.
Everything that would let a change escape the saves lowering derives from these forms is refused
here.
"""

from __future__ import annotations

from loom.lang.check import emits, variables
from loom.lang.check.calls import classify
from loom.lang.check.checker import Checker
from loom.lang.check.facts import (
    ApiStmt,
    CallOp,
    Create,
    DeleteStmt,
    IfLetFact,
    Load,
    NotFoundFact,
    ReadLoad,
    ServiceStmt,
    StateWrite,
)
from loom.lang.check.reads import query_refuses
from loom.lang.check.scope import Binding, Scope
from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, a, is_error
from loom.model import ir


def terminates(stmts: list[ast.Stmt]) -> bool:
    """Does every path through this block end in `return` or `notFound`?"""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.NotFound)):
        return True
    if isinstance(last, (ast.IfLet, ast.If)) and last.otherwise is not None:
        return terminates(last.then) and terminates(last.otherwise)
    return False


def block(ck: Checker, stmts: list[ast.Stmt], scope: Scope, result: AnyType | None) -> None:
    dead = reported = False
    for stmt in stmts:
        if dead and not reported:
            # One report per block; the dead statements are still checked, so a `let` among them
            # does not turn every later use into an unknown name.
            ck.report(
                "loom.unreachable-statement",
                "this statement comes after the end of the body and never runs",
                stmt.span,
                "unreachable",
                help="move it before the `return` / `notFound`, or remove it",
            )
            reported = True
        stmt_(ck, stmt, scope, result)
        dead = dead or isinstance(stmt, (ast.Return, ast.NotFound, ast.Complete))


def stmt_(ck: Checker, stmt: ast.Stmt, scope: Scope, result: AnyType | None) -> None:
    if isinstance(stmt, ast.Precondition):
        ck.facts.exprs[stmt.condition] = ck.condition(stmt.condition, scope, "a precondition")
    elif isinstance(stmt, ast.Emit):
        if query_refuses(ck, scope, "emit events", stmt.span):
            for entry in stmt.fields:
                ck.expr(entry.value, scope)
            return
        emits.check_emit(ck, stmt, scope)
    elif isinstance(stmt, ast.Return):
        _return(ck, stmt, scope, result)
    elif isinstance(stmt, ast.Assign):
        _assign(ck, stmt, scope)
    elif isinstance(stmt, ast.Let):
        _let(ck, stmt, scope)
    elif isinstance(stmt, ast.Var):
        variables.declare(ck, stmt, scope)
    elif isinstance(stmt, ast.ExprStmt):
        _expr_stmt(ck, stmt, scope)
    elif isinstance(stmt, ast.IfLet):
        _if_let(ck, stmt, scope, result)
    elif isinstance(stmt, ast.If):
        _if(ck, stmt, scope, result)
    elif isinstance(stmt, ast.ForEach):
        _for(ck, stmt, scope, result)
    elif isinstance(stmt, ast.NotFound):
        if scope.body not in ("create", "command", "query", "starter", "on", "timeout", "timer"):
            notfound_outside(ck, stmt, "an `apply` clause")
        ck.facts.stmts[stmt] = NotFoundFact(scope.miss if stmt.detail is None else None)
    elif isinstance(stmt, (ast.Schedule, ast.Cancel, ast.Complete)):
        timeout_stmt(ck, stmt, scope)


def timeout_stmt(ck: Checker, stmt: ast.Schedule | ast.Cancel | ast.Complete, scope: Scope) -> None:
    """`schedule` / `cancel` / `complete`: only in a body of a correlated workflow (not `apply`).
    Names are matched against the workflow's `on timeout` handlers in workflows."""
    word = {ast.Schedule: "schedule", ast.Cancel: "cancel", ast.Complete: "complete"}[type(stmt)]
    if isinstance(stmt, ast.Schedule) and stmt.at is not None:
        x = ck.root(stmt.at, scope, ir.DATETIME)
        ck.facts.exprs[stmt.at] = x
        ck.mismatch(x, stmt.at, ir.DATETIME, f"`schedule … at` needs a datetime, not {a(x.type)}")
    if isinstance(stmt, ast.Schedule) and stmt.after is not None:
        x = ck.root(stmt.after, scope, ir.DURATION)
        ck.mismatch(
            x,
            stmt.after,
            ir.DURATION,
            f"`schedule … after` needs a duration, not {a(x.type)}",
            help="write a duration: `15m`, `minutes(n)`, `deadline - now()`",
        )
    wf = scope.wf
    if wf is not None and scope.correlated and scope.body != "apply" and scope.kind == "workflow":
        if not scope.bound[0]:
            ck.report(
                "loom.state-correlation-missing",
                f"`{word}` acts on the instance, used before the body binds it",
                stmt.span,
                "no instance yet",
                help="assign the correlation field first; that is what loads or allocates the "
                "instance",
            )
            scope.bound[0] = True  # one report per body
        return
    if wf is None or scope.kind != "workflow":
        where = "outside the body of a workflow"
        fix = (
            "move it into a body of a workflow that keeps instances (one with an id-shaped "
            "state field); a context-wide sweep is a `timer NAME every 1h { … }`"
        )
    elif scope.body == "apply":
        where = "in an `apply` clause"
        fix = (
            "an `apply` only folds an event into the state; arm or end the process in the "
            "body that emits the event"
        )
    else:
        where = f"in `{wf.name}`, which keeps no instance"
        fix = (
            "declare the correlation key as a state field (e.g. `appointment: Appointment "
            "id`): timeouts and completion belong to one instance"
        )
    ck.report(
        "loom.timeout-outside-process",
        f"`{word}` is used {where}",
        stmt.span,
        "no process instance here",
        help=fix,
    )


def notfound_outside(ck: Checker, stmt: ast.NotFound, where: str) -> None:
    ck.report(
        "loom.notfound-outside-body",
        f"`notFound` cannot be used in {where}",
        stmt.span,
        "not a workflow or handler body",
        help="only a workflow `create` or a command/query handler ends with `notFound`; "
        "refuse here with a `precondition`",
    )


def _return(ck: Checker, stmt: ast.Return, scope: Scope, result: AnyType | None) -> None:
    if result is None:
        ck.report(
            "loom.workflow-unexpected-return",
            "`return` in a body that declares no result type",
            stmt.span,
            "nothing to return",
            help="declare the result after the parameters, e.g. `create(…): Account id`, "
            "or remove the `return`",
        )
        ck.root(stmt.value, scope)
        return
    x = ck.root(stmt.value, scope, result)
    ck.mismatch(
        x,
        stmt.value,
        result,
        f"this body answers {a(result)}, but the returned value is {a(x.type)}",
    )


def _assign(ck: Checker, stmt: ast.Assign, scope: Scope) -> None:
    target = stmt.target
    body = variables.body_name(scope)
    local = scope.names.get(target.name) if isinstance(target, ast.Name) else None
    if stmt.op in ("+=", "-="):
        n = ck.text(target.span)
        ck.report(
            "loom.workflow-compound-assign",
            f"`{stmt.op}` is not allowed in {body}",
            stmt.span,
            "compound assignment",
            help=f"write `{n} := {n} {stmt.op[0]} …`"
            if local is not None and local.kind == "var"
            else "change the aggregate through one of its operations, e.g. "
            "`account.deposit(amount)`; assign state with `:=`",
        )
    elif isinstance(target, ast.MemberAccess):
        ck.report(
            "loom.workflow-foreign-assign",
            f"{body} cannot assign `{ck.text(target.span)}`",
            target.span,
            "a field of an aggregate",
            help="aggregates change only through their operations; call one that does this "
            "assignment",
        )
    elif isinstance(target, ast.Name) and local is not None and local.kind == "var":
        variables.reassign(ck, stmt, target, local, scope)
        return
    elif isinstance(target, ast.Name) and local is not None:
        ck.report(
            "loom.assign-to-readonly",
            f"cannot assign `{target.name}`: "
            + ("a parameter never changes" if local.kind == "param" else "a `let` never changes"),
            target.span,
            "read-only",
            secondary=[(local.span, "declared here")],
            help=_readonly_help(local),
        )
    elif isinstance(target, ast.Name) and target.name in scope.state:
        _state_write(ck, stmt, target, scope)
        return
    else:
        ck.report(
            "loom.workflow-foreign-assign",
            "a workflow has no such state field to assign"
            if scope.wf is not None
            else f"{body} has no fields to assign",
            stmt.target.span,
            "nothing to assign here",
            help="change aggregates through their operations; "
            + (
                "declare workflow state as `name: T` in the workflow"
                if scope.wf is not None
                else "a value the body changes is a `var`: `var total = 0`, then `total := …`"
            ),
        )
    ck.root(stmt.value, scope)


def _readonly_help(b: Binding) -> str:
    if b.kind in ("loaded", "created"):
        return "an aggregate changes through its operations: call one, e.g. `x.rename(…)`"
    if b.kind == "param":
        return f"copy it into a `var` the body may change: `var left = {b.name}`, then `left := …`"
    return (
        f"declare it with `var {b.name} = …` to change it with `:=` (in a loop too: "
        f"`var total = 0`, then `total := total + x`)"
    )


def _state_write(ck: Checker, stmt: ast.Assign, target: ast.Name, scope: Scope) -> None:
    wf = scope.wf
    assert wf is not None
    ck.refer_state(target, scope)
    ft = scope.state[target.name]
    if wf.event_sourced and scope.body != "apply":
        ck.report(
            "loom.workflow-eventsourced-assign",
            f"`{wf.name}` is event-sourced: its state changes only in `apply` clauses",
            stmt.span,
            "`:=` in an event-sourced workflow",
            help="emit an event and fold it into the state in `apply(e: Event) { … }`",
        )
        ck.root(stmt.value, scope)
        return
    if not scope.correlated:
        ck.report(
            "loom.workflow-uncorrelated-state-write",
            f"`{wf.name}` has no id-shaped state field, so no instance row keeps `{target.name}`",
            stmt.span,
            "state write without a key",
            help="declare the correlation key as a state field, e.g. `order: Order id`",
        )
        ck.root(stmt.value, scope)
        return
    x = ck.root(stmt.value, scope, ft)
    ck.mismatch(x, stmt.value, ft, f"cannot assign {a(x.type)} to `{target.name}`, {a(ft)} state")
    key = target.name == _correlation(ck, wf)
    if key and scope.body in ("starter", "on", "timeout"):
        ck.report(
            "loom.assign-to-readonly",
            f"cannot assign `{target.name}`: it keys the instance this reaction runs on, and `by` "
            "already gave it its value",
            stmt.span,
            "the correlation key",
            help=f"remove the assignment; the instance is the one whose `{target.name}` is the "
            "`by` value",
        )
        return
    if key and scope.depth > 0 and not scope.bound[0]:
        ck.report(
            "loom.state-correlation-missing",
            f"the correlation field `{target.name}` must be assigned at the top level of the body",
            stmt.span,
            "assigned inside a block",
            help="assign it before any branch or loop, so every path binds the instance",
        )
    elif not key:
        unbound_state(ck, scope, stmt.span, target.name)
    scope.bound[0] = scope.bound[0] or key
    ck.facts.stmts[stmt] = StateWrite(target.name, x, key and scope.body != "apply")


def unbound_state(ck: Checker, scope: Scope, span: Span, name: str) -> None:
    """State is used before the create has bound its instance (by assigning the key)."""
    if scope.bound[0]:
        return
    row = scope.body == "projection"
    ck.report(
        "loom.state-correlation-missing",
        f"`{name}` is a field of the projection's row, used before the body binds the row"
        if row
        else f"`{name}` is workflow state, used before the body binds its instance",
        span,
        "no row yet" if row else "no instance yet",
        help="assign the key field first (or add `by e.<field>`); that is what loads or "
        "allocates the row"
        if row
        else "assign the correlation field first; that is what loads or allocates the instance",
    )
    scope.bound[0] = True  # one report per body


def _correlation(ck: Checker, wf: ast.Workflow) -> str | None:
    return next((f.name for f in wf.state if isinstance(ck.type_of(f.type), ir.IdType)), None)


def _let(ck: Checker, stmt: ast.Let, scope: Scope) -> None:
    v = stmt.value
    if isinstance(v, ast.Call) and isinstance(v.callee, ast.MemberAccess):
        found = classify(ck, v, scope, "let", stmt.name)
        b: Binding
        if isinstance(found, (Load, Create)):
            kind = "loaded" if isinstance(found, Load) else "created"
            b = Binding(
                stmt.name,
                ir.AggregateType(found.aggregate, scope.ctx.name),
                stmt.name_span,
                kind,
                found.aggregate,
                _repo(scope, found.aggregate),
            )
            ck.facts.stmts[stmt] = found
        elif isinstance(found, ReadLoad):
            read = found.read
            at = ir.AggregateType(read.aggregate, scope.ctx.name)
            if read.cardinality == "many":
                b = Binding(stmt.name, ir.ListType(at), stmt.name_span, "value", read.aggregate)
            else:
                b = Binding(
                    stmt.name, at, stmt.name_span, "loaded", read.aggregate, read.repository
                )
            ck.facts.stmts[stmt] = found
        elif isinstance(found, ir.Expr):
            ck.facts.exprs[v] = found
            t = found.type if not isinstance(found.type, ir.VoidType) else ERROR
            b = Binding(stmt.name, t, stmt.name_span, "value", used=is_error(t))
        else:
            b = Binding(stmt.name, ERROR, stmt.name_span, "value", used=True)
        ck.bind_local(scope, b)
        return
    x = ck.root(v, scope)
    if isinstance(x.type, ir.VoidType):
        x = ck.poison(v)
    ck.bind_local(scope, Binding(stmt.name, x.type, stmt.name_span, "value", used=is_error(x.type)))


def _repo(scope: Scope, agg: str) -> str | None:
    r = scope.ctx.repo_for.get(agg)
    return r.name if r else None


def _expr_stmt(ck: Checker, stmt: ast.ExprStmt, scope: Scope) -> None:
    e = stmt.expr
    if isinstance(e, ast.Call) and isinstance(e.callee, ast.MemberAccess):
        found = classify(ck, e, scope, "stmt", None)
        if isinstance(found, (CallOp, ServiceStmt, DeleteStmt, ApiStmt)):
            ck.facts.stmts[stmt] = found
        return
    ck.expr(e, scope)
    ck.report(
        "loom.invalid-statement",
        f"this statement has no effect in {variables.body_name(scope)}",
        stmt.span,
        "the value is not used",
        help="a body's statement loads, creates, calls an operation, emits, checks a "
        "precondition, assigns a `var` or returns",
    )


def _if_let(ck: Checker, stmt: ast.IfLet, scope: Scope, result: AnyType | None) -> None:
    src = stmt.source
    read: ir.Read | None = None
    value: ir.Expr | None = None
    inner: AnyType = ERROR
    kind, agg, repo = "value", None, None
    if isinstance(src, ast.Call) and isinstance(src.callee, ast.MemberAccess):
        found = classify(ck, src, scope, "iflet", stmt.name)
        if isinstance(found, ir.Read):
            read = found
            inner = ir.AggregateType(found.aggregate, scope.ctx.name)
            kind, agg, repo = "loaded", found.aggregate, found.repository
        elif isinstance(found, ir.Expr):
            value = found
    else:
        value = ck.expr(src, scope)
    if value is not None:
        if isinstance(value.type, ir.OptionalType):
            inner = value.type.inner
        elif not is_error(value.type):
            ck.report(
                "loom.iflet-bad-source",
                f"`{ck.text(src.span)}` is {a(value.type)}, not optional, so `if let` has nothing "
                "to branch on",
                src.span,
                "not optional",
                help="use the value directly, or branch on an optional read such as "
                "`Repo.find(C)` / `Repo.findBy(key: …)`",
            )
        ck.facts.exprs[src] = value
    ck.facts.stmts[stmt] = IfLetFact(read, value)
    then = scope.child()
    ck.bind_local(then, Binding(stmt.name, inner, stmt.name_span, kind, agg, repo, used=True))
    block(ck, stmt.then, then, result)
    ck.warn_unused(_own(then, scope))
    if stmt.otherwise is not None:
        other = scope.child(miss=agg)
        block(ck, stmt.otherwise, other, result)
        ck.warn_unused(_own(other, scope))


def _if(ck: Checker, stmt: ast.If, scope: Scope, result: AnyType | None) -> None:
    """`if cond { … } else { … }`: each branch is a block of its own (its bindings stay in it, and
    lowering saves what it creates or mutates at its end)."""
    ck.facts.exprs[stmt.condition] = ck.condition(stmt.condition, scope, "the condition of `if`")
    for branch in (stmt.then, stmt.otherwise):
        if branch is None:
            continue
        inner = scope.child(miss=scope.miss)
        block(ck, branch, inner, result)
        ck.warn_unused(_own(inner, scope))


def _own(inner: Scope, outer: Scope) -> Scope:
    s = Scope(inner.ctx, inner.agg, inner.kind)
    s.names = {n: b for n, b in inner.names.items() if outer.names.get(n) is not b}
    return s


def _for(ck: Checker, stmt: ast.ForEach, scope: Scope, result: AnyType | None) -> None:
    items = ck.root(stmt.items, scope)
    el: AnyType = ERROR
    kind, agg, repo = "value", None, None
    if isinstance(items.type, ir.ListType):
        el = items.type.element
        if isinstance(el, ir.AggregateType):
            kind, agg, repo = "loaded", el.name, _repo(scope, el.name)
    elif not is_error(items.type):
        ck.report(
            "loom.type-mismatch",
            f"`for` goes over a list, but `{ck.text(stmt.items.span)}` is {a(items.type)}",
            stmt.items.span,
            f"this is {a(items.type)}",
            help="loop over a list, e.g. `let due = Repo.run(R(…))` then `for t in due { … }`",
        )
    inner = scope.child()
    ck.bind_local(inner, Binding(stmt.name, el, stmt.name_span, kind, agg, repo, used=True))
    block(ck, stmt.body, inner, result)
    ck.warn_unused(_own(inner, scope))
