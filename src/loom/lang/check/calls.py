"""Calls in workflow and handler bodies: `Repo.read(…)`, `Agg.create(…)`, `x.op(…)`, `Svc.m(…)`.

`classify` judges one `recv.method(args)` by where it stands (`position`): the whole value of a
`let`, a statement of its own, the source of an `if let`, or part of a larger expression ("value").
It reports what is refused and returns what lowering needs (a fact of `facts.py`, an `ir.Read` for
an `if let` source, or a typed `ir.Expr` for a value call).
"""

from __future__ import annotations

from loom.lang.check import crossings, principal
from loom.lang.check.apis import api_call
from loom.lang.check.checker import Checker
from loom.lang.check.creates import create_args
from loom.lang.check.facts import CallOp, Create, ServiceStmt
from loom.lang.check.reads import READS, Found, args_only, query_refuses, repo_call
from loom.lang.check.scope import Binding, Scope
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.syntax import ast
from loom.lang.types import a, is_error
from loom.model import ir
from loom.model.naming import snake


def repo_name(scope: Scope, agg: str) -> str | None:
    r = scope.ctx.repo_for.get(agg)
    return r.name if r else None


def classify(ck: Checker, call: ast.Call, scope: Scope, position: str, name: str | None) -> Found:
    assert isinstance(call.callee, ast.MemberAccess)
    recv, method = call.callee.obj, call.callee.name
    mspan = call.callee.name_span
    ctx = scope.ctx
    if principal.is_current_user(recv, scope):
        x = ck.expr(call, scope)  # `currentUser.hasRole(…)`: a value, typed with expressions
        if position == "stmt":
            ck.report(
                "loom.invalid-statement",
                f"`{ck.text(call.span)}` computes a value that is not used",
                call.span,
                "the value is not used",
                help="bind it with `let`, or use it in a condition",
            )
            return None
        return x
    if crossings.qualified(ck, ctx, recv, set(scope.names)):
        args_only(ck, call, scope)
        return None
    if not isinstance(recv, ast.Name):
        ck.expr(recv, scope)
        ck.report(
            "loom.unsupported-call",
            "only a repository, an aggregate, a domain service or a local can receive a call here",
            call.span,
            "unsupported call",
            help="bind the receiver with `let` first",
        )
        args_only(ck, call, scope)
        return None
    r = recv.name
    if scope.kind == "service" and r not in scope.names and r not in ctx.services:
        ck.report(
            "loom.service-impure",
            f"a domain service method cannot call `{r}.{method}`",
            call.span,
            "not allowed in a service",
            help="a service works on the aggregates passed to it; load, create and delete in the "
            "workflow or handler that calls it",
        )
        args_only(ck, call, scope)
        return None
    receiver = ctx.names.get(r)
    if r not in scope.names and receiver is not None:
        ck.refer(recv.span, receiver.name_span)
    if r in scope.names:
        return local_call(ck, call, scope, position, scope.names[r], method, mspan)
    if r in ctx.repositories:
        return repo_call(ck, call, scope, position, name, ctx.repositories[r], method, mspan)
    if r in ctx.services:
        return service_call(ck, call, scope, position, ctx.services[r], method, mspan)
    if r in ctx.resources:
        return api_call(ck, call, scope, position, ctx.resources[r], method, mspan)
    if r in ctx.aggregates:
        return _aggregate_call(ck, call, scope, position, name, ctx.aggregates[r], method, mspan)
    elsewhere = ck.prog.repositories_elsewhere(r, ctx.name)
    if r in ctx.projections:
        ck.report(
            "loom.workflow-unknown-name",
            f"`{r}` is a projection: a read model served over HTTP only "
            f"(`GET /api/projections/{snake(r)}/{{key}}`), never read by a workflow",
            recv.span,
            "a projection, not a repository",
            secondary=[(ctx.projections[r].name_span, "projection declared here")],
            help="fold the same events into an aggregate of this context (a local replica) and "
            "read that through its repository",
        )
    elif elsewhere:
        other_ctx, other = elsewhere[0]
        ck.report(
            "loom.workflow-cross-context-repository",
            f"`{r}` is a repository of context `{other_ctx}`, not of `{ctx.name}`",
            recv.span,
            "another context's repository",
            secondary=[(other.name_span, f"declared in context `{other_ctx}`")],
            help="a workflow loads only through its own context's repositories; consume the "
            "other context's events into a local aggregate, call its handlers through its API "
            f"(`resource … {{ kind: api  context: {other_ctx} }}`), or move the workflow",
        )
    elif not crossings.foreign_aggregate(ck, ctx, r, recv.span):
        candidates = [*ctx.repositories, *ctx.aggregates, *ctx.services, *scope.names]
        ck.report(
            "loom.workflow-unknown-name",
            f"`{r}` is not a repository, an aggregate, a domain service or a local here",
            recv.span,
            "unknown receiver",
            # A read method says the receiver should be a repository: suggest repositories first.
            help=(did_you_mean(r, ctx.repositories) if method in READS else None)
            or did_you_mean(r, candidates)
            or f"declare a repository: `repository {r} for <Aggregate> {{ }}`",
        )
    args_only(ck, call, scope)
    return None


def _aggregate_call(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    position: str,
    name: str | None,
    agg: ast.Aggregate,
    method: str,
    mspan: Span,
) -> Found:
    r = agg.name
    assert isinstance(call.callee, ast.MemberAccess)
    if method != "create":
        ck.report(
            "loom.unknown-operation",
            f"`{r}.{method}` is not a workflow step: an aggregate is only created from a workflow",
            mspan,
            "unknown method",
            help=did_you_mean(method, ["create"])
            or f"create it with `{r}.create(…)`, or call operations on a local",
        )
        args_only(ck, call, scope)
        return None
    if query_refuses(ck, scope, f"create a `{r}`", call.span):
        args_only(ck, call, scope)
        return None
    if position != "let":
        ck.report(
            "loom.workflow-nested-call" if position == "value" else "loom.invalid-statement",
            f"`{r}.create(…)` must be the whole value of a `let`",
            call.span,
            "create not bound",
            help=f"bind it, e.g. `let {r[:1].lower() + r[1:]} = {r}.create(…)`, so it is "
            "saved at exit",
        )
        args_only(ck, call, scope)
        return None
    if agg.name not in scope.ctx.repo_for:
        ck.report(
            "loom.workflow-missing-repository",
            f"`{r}` has no repository, so a created `{r}` could never be saved",
            call.callee.span,
            "nowhere to save it",
            secondary=[(agg.name_span, "aggregate declared here")],
            help=f"declare one: `repository {r}s for {r} {{ }}`",
        )
        args_only(ck, call, scope)
        return None
    given = create_args(ck, scope.ctx, agg, call, scope)
    return Create(name or "", agg.name, given) if given is not None else None


def local_call(
    ck: Checker, call: ast.Call, scope: Scope, position: str, b: Binding, method: str, mspan: Span
) -> Found:
    b.used = True
    t = b.type
    if is_error(t):
        args_only(ck, call, scope)
        return None
    if isinstance(t, ir.IdType):
        repo = repo_name(scope, t.aggregate) or "its repository"
        ck.report(
            "loom.operation-on-id",
            f"`{b.name}` is {a(t)}, not {a(t.aggregate)}: load it before calling `{method}`",
            call.callee.span,
            "an id, not an aggregate",
            help=f"let {t.aggregate[:1].lower() + t.aggregate[1:]} = {repo}.getById({b.name})",
        )
        args_only(ck, call, scope)
        return None
    if not isinstance(t, ir.AggregateType):
        ck.report(
            "loom.unknown-operation",
            f"{a(t)} has no operation `{method}`",
            mspan,
            "no such operation",
        )
        args_only(ck, call, scope)
        return None
    agg = scope.ctx.aggregates[t.name]
    ops = {o.name: o for o in agg.operations}
    fns = {f.name: f for f in agg.functions}
    if method in fns and method not in ops:
        f = fns[method]
        ck.refer(mspan, f.name_span)
        args = ck.check_args(call, scope, f.params, f"function `{agg.name}.{method}`", f.name_span)
        value = ir.FunctionCall(
            method,
            args,
            ck.type_of(f.result),  # type: ignore[arg-type]
            ck.text(call.span),
            "aggregate",
            ir.Local(b.name, t, b.name),
            agg.name,
        )
        if position == "stmt":
            ck.report(
                "loom.invalid-statement",
                f"`{b.name}.{method}(…)` computes a value that is not used",
                call.span,
                "the value is not used",
                help=f"`{method}` is a function; bind its value with `let`",
            )
        return value
    if method not in ops:
        ck.report(
            "loom.unknown-operation",
            f"`{agg.name}` has no operation `{method}`",
            mspan,
            "unknown operation",
            help=did_you_mean(method, [*ops, *fns]),
        )
        args_only(ck, call, scope)
        return None
    op = ops[method]
    ck.refer(mspan, op.name_span)
    args = ck.check_args(call, scope, op.params, f"operation `{agg.name}.{method}`", op.name_span)
    if op.private:
        ck.report(
            "loom.private-operation-call",
            f"`{agg.name}.{method}` is private: only the aggregate's own members may call it",
            mspan,
            "private operation",
            secondary=[(op.name_span, "declared `private` here")],
            help="call a public operation of the aggregate that uses it, or drop `private`",
        )
        return None
    if query_refuses(ck, scope, f"call the operation `{method}`", call.span):
        return None
    if position != "stmt":
        ck.report(
            "loom.workflow-mutation-unsaved",
            f"`{b.name}.{method}(…)` changes `{b.name}`, so it "
            "must be a statement of its own, not a value",
            call.span,
            "mutating call used as a value",
            help=f"call it as a statement of its own: `{b.name}.{method}(…)`",
        )
        return None
    if b.kind not in ("loaded", "created"):
        ck.report(
            "loom.workflow-mutation-unsaved",
            f"`{b.name}` is neither created nor loaded from "
            f"a repository, so the change made by `{method}` would never be saved",
            call.callee.span,
            "not saved at exit",
            secondary=[(b.span, "bound here")],
            help="operate on a local bound by a repository read or `Agg.create(…)`",
        )
        return None
    b.mutated = True
    return CallOp(b.name, agg.name, method, args)


def mutated_params(ck: Checker, scope: Scope, m: ast.ServiceMethod) -> list[int]:
    """Indexes of the aggregate parameters a service method calls operations on (syntactically)."""
    aggs = {
        p.name: i
        for i, p in enumerate(m.params)
        if p.type.name in scope.ctx.aggregates and not (p.type.is_id or p.type.is_list)
    }
    out: list[int] = []
    for s in m.body or []:
        if (
            isinstance(s, ast.ExprStmt)
            and isinstance(s.expr, ast.Call)
            and isinstance(s.expr.callee, ast.MemberAccess)
            and isinstance(s.expr.callee.obj, ast.Name)
            and s.expr.callee.obj.name in aggs
        ):
            i = aggs[s.expr.callee.obj.name]
            if i not in out:
                out.append(i)
    return sorted(out)


def service_call(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    position: str,
    svc: ast.DomainService,
    method: str,
    mspan: Span,
) -> Found:
    methods = {m.name: m for m in svc.methods}
    m = methods.get(method)
    if m is None:
        ck.report(
            "loom.unknown-operation",
            f"domain service `{svc.name}` has no method `{method}`",
            mspan,
            "unknown method",
            help=did_you_mean(method, methods),
        )
        args_only(ck, call, scope)
        return None
    ck.refer(mspan, m.name_span)
    args = ck.check_args(call, scope, m.params, f"`{svc.name}.{method}`", m.name_span)
    mut = mutated_params(ck, scope, m)
    text = ck.text(call.span)
    if not mut:
        if position == "stmt":
            ck.report(
                "loom.invalid-statement",
                f"`{svc.name}.{method}(…)` changes nothing and its value is not used",
                call.span,
                "the value is not used",
                help="bind its value with `let`, or remove the call",
            )
            return None
        rt = ck.type_of(m.result) if m.result is not None else ir.VOID
        return ir.ServiceCall(svc.name, method, args, rt, text)  # type: ignore[arg-type]
    if query_refuses(ck, scope, f"call the mutating service method `{method}`", call.span):
        return None
    if position != "stmt":
        ck.report(
            "loom.workflow-mutation-unsaved",
            f"`{svc.name}.{method}(…)` changes its aggregates, so it must be a statement of its "
            "own, not a value",
            call.span,
            "mutating call used as a value",
            help=f"call it as a statement of its own: `{svc.name}.{method}(…)`",
        )
        return None
    mutates: list[str] = []
    ok = True
    for i in mut:
        if i >= len(call.args):
            continue
        arg = call.args[i]
        v = arg.value if isinstance(arg, ast.Arg) else None
        b = scope.names.get(v.name) if isinstance(v, ast.Name) else None
        if b is None or b.kind not in ("loaded", "created"):
            ck.report(
                "loom.workflow-mutation-unsaved",
                f"`{svc.name}.{method}` changes its argument `{m.params[i].name}`, which must be a "
                "local created or loaded from a repository",
                arg.span,
                "not a saved local",
                help="bind the aggregate with a repository read or `Agg.create(…)` and pass the "
                "local",
            )
            ok = False
            continue
        b.mutated = True
        if b.name not in mutates:
            mutates.append(b.name)
    if not ok:
        return None
    return ServiceStmt(svc.name, method, args, tuple(mutates))
