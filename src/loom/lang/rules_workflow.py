"""The rules of workflow bodies.

A workflow only orchestrates: it loads (`Repo.getById`), creates (`Agg.create`), calls operations as
statements, emits, checks preconditions and returns. Everything that would let a change escape the
exit save (a bound mutating call, an explicit save, a field write) is refused here, because lowering
derives the saves from exactly these statement forms.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang import ast
from loom.lang.check import Checker
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.expressions import Binding, Scope, a
from loom.lang.resolve import ContextSymbols, resolve_type
from loom.lang.types import ERROR, AnyType, is_error, show, storable
from loom.model import ir

SAVE_METHODS = ("save", "insert", "update", "add", "commit")
REPO_METHODS = ("getById",)


@dataclass
class Load:
    name: str
    repository: str
    aggregate: str
    id: ir.Expr


@dataclass
class Create:
    name: str
    aggregate: str
    given: dict[str, ir.Expr]


@dataclass
class CallOp:
    target: str
    aggregate: str
    operation: str
    args: tuple[ir.Expr, ...]


def check_workflow(ck: Checker, ctx: ContextSymbols, wf: ast.Workflow) -> None:
    for c in wf.creates:
        _check_create(ck, ctx, wf, c)


def _check_create(ck: Checker, ctx: ContextSymbols, wf: ast.Workflow, c: ast.Create) -> None:
    scope = Scope(ctx, None, "workflow")
    for p in c.params:
        t = resolve_type(ctx, p.type, ck.sink, prog=ck.prog)
        ck.types[id(p.type)] = t
        scope.names.setdefault(p.name, Binding(p.name, t, p.name_span, "param"))
    result: AnyType | None = None
    if c.result is not None:
        result = resolve_type(ctx, c.result, ck.sink, value=False, prog=ck.prog)
        if not storable(result):
            ck.report(
                "loom.workflow-return-type",
                f"a workflow cannot answer {a(result)}: only values and ids cross the wire",
                c.result.span,
                "unsupported result type",
                help=f"return the id (`{show(result).rstrip('[]?')} id`) and read the record "
                "back with a GET",
            )
            result = ERROR
        ck.types[id(c.result)] = result
    binds: list[Binding] = []
    ck.bindings[id(c)] = binds
    dead = reported = False
    for stmt in c.body:
        if dead and not reported:
            # One report per body; the dead statements are still checked, so a `let` among them
            # does not turn every later use into an unknown name.
            ck.report(
                "loom.unreachable-statement",
                "this statement comes after `return` and never runs",
                stmt.span,
                "unreachable",
                help="move it before the `return`, or remove it",
            )
            reported = True
        _stmt(ck, stmt, scope, result, binds)
        dead = dead or isinstance(stmt, ast.Return)
    last = c.body[-1] if c.body else None
    if c.result is not None and not any(isinstance(s, ast.Return) for s in c.body):
        ck.report(
            "loom.workflow-missing-return",
            f"`create` declares the result `{ck.text(c.result.span)}` but its body does not "
            "end in `return`",
            c.result.span,
            "result declared here",
            secondary=[(last.span, "the body ends here")] if last else [],
            help="end the body with `return <value>`, or remove the result type",
        )
    ck.warn_unused(scope)


def _stmt(
    ck: Checker, stmt: ast.Stmt, scope: Scope, result: AnyType | None, binds: list[Binding]
) -> None:
    if isinstance(stmt, ast.Precondition):
        ck.exprs[id(stmt.condition)] = ck.condition(stmt.condition, scope, "a precondition")
    elif isinstance(stmt, ast.Emit):
        ck.check_emit(stmt, scope)
    elif isinstance(stmt, ast.Return):
        if result is None:
            ck.report(
                "loom.workflow-unexpected-return",
                "`return` in a `create` that declares no result type",
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
            f"this `create` answers {a(result)}, but the returned value is {a(x.type)}",
        )
    elif isinstance(stmt, ast.Assign):
        _assign(ck, stmt, scope)
    elif isinstance(stmt, ast.Let):
        _let(ck, stmt, scope, binds)
    elif isinstance(stmt, ast.ExprStmt):
        _expr_stmt(ck, stmt, scope)


def _assign(ck: Checker, stmt: ast.Assign, scope: Scope) -> None:
    target = stmt.target
    if stmt.op in ("+=", "-="):
        ck.report(
            "loom.workflow-compound-assign",
            f"`{stmt.op}` is not allowed in a workflow",
            stmt.span,
            "compound assignment",
            help="change the aggregate through one of its operations, e.g. "
            "`account.deposit(amount)`",
        )
    elif isinstance(target, ast.MemberAccess):
        ck.report(
            "loom.workflow-foreign-assign",
            f"a workflow cannot assign `{ck.text(target.span)}`",
            target.span,
            "a field of an aggregate",
            help="aggregates change only through their operations; call one that does this "
            "assignment",
        )
    elif isinstance(target, ast.Name) and target.name in scope.names:
        b = scope.names[target.name]
        ck.report(
            "loom.assign-to-readonly",
            f"cannot assign `{target.name}`: bindings of a workflow never change",
            target.span,
            "read-only",
            secondary=[(b.span, "declared here")],
            help="use a new `let` for a new value",
        )
    else:
        ck.report(
            "loom.workflow-foreign-assign",
            "a workflow has no fields to assign",
            stmt.target.span,
            "nothing to assign here",
            help="change aggregates through their operations",
        )
    ck.root(stmt.value, scope)


def _let(ck: Checker, stmt: ast.Let, scope: Scope, binds: list[Binding]) -> None:
    v = stmt.value
    if isinstance(v, ast.Call) and isinstance(v.callee, ast.MemberAccess):
        found = _classify(ck, v, scope, "let", stmt.name)
        if isinstance(found, Load):
            b = Binding(
                stmt.name,
                ir.AggregateType(found.aggregate, scope.ctx.name),
                stmt.name_span,
                "loaded",
                found.aggregate,
                found.repository,
            )
            ck.stmts[id(stmt)] = found
        elif isinstance(found, Create):
            b = Binding(
                stmt.name,
                ir.AggregateType(found.aggregate, scope.ctx.name),
                stmt.name_span,
                "created",
                found.aggregate,
                _repo_name(scope.ctx, found.aggregate),
            )
            ck.stmts[id(stmt)] = found
        else:
            b = Binding(stmt.name, ERROR, stmt.name_span, "value", used=True)
        if stmt.name not in scope.names and b.kind != "value":
            binds.append(b)
        ck.bind_local(scope, b)
        return
    x = ck.root(v, scope)
    if isinstance(x.type, ir.VoidType):
        x = ck.poison(v)
    ck.bind_local(scope, Binding(stmt.name, x.type, stmt.name_span, "value", used=is_error(x.type)))


def _repo_name(ctx: ContextSymbols, agg: str) -> str | None:
    r = ctx.repo_for.get(agg)
    return r.name if r else None


def _expr_stmt(ck: Checker, stmt: ast.ExprStmt, scope: Scope) -> None:
    e = stmt.expr
    if isinstance(e, ast.Call) and isinstance(e.callee, ast.MemberAccess):
        found = _classify(ck, e, scope, "stmt", None)
        if isinstance(found, CallOp):
            ck.stmts[id(stmt)] = found
        return
    ck.expr(e, scope)
    ck.report(
        "loom.invalid-statement",
        "this statement has no effect in a workflow",
        stmt.span,
        "the value is not used",
        help="a workflow statement loads, creates, calls an operation, emits, checks a "
        "precondition or returns",
    )


def value_call(ck: Checker, e: ast.Call, scope: Scope) -> ir.Expr:
    """A `recv.m(...)` call used as a value inside a larger expression of a workflow body."""
    _classify(ck, e, scope, "value", None)
    return ck.poison(e)


def _classify(
    ck: Checker, call: ast.Call, scope: Scope, position: str, name: str | None
) -> Load | Create | CallOp | None:
    """Judge `recv.method(args)` in a workflow body; report and return None when it is refused.

    `position` is where the call stands: the whole value of a `let`, a statement of its own, or a
    part of a larger expression ("value") — the only place a load or create is never allowed.
    """
    assert isinstance(call.callee, ast.MemberAccess)
    recv, method = call.callee.obj, call.callee.name
    mspan = call.callee.name_span
    ctx = scope.ctx
    if not isinstance(recv, ast.Name):
        ck.expr(recv, scope)
        ck.report(
            "loom.unsupported-call",
            "only a repository, an aggregate or a local can receive a call in a workflow",
            call.span,
            "unsupported call",
            help="bind the receiver with `let` first",
        )
        return None
    r = recv.name
    if r in scope.names:
        return _local_call(ck, call, scope, position, scope.names[r], method, mspan)
    if r in ctx.repositories:
        repo = ctx.repositories[r]
        if method in SAVE_METHODS:
            ck.report(
                "loom.workflow-explicit-save",
                f"`{r}.{method}(…)`: a workflow never saves explicitly",
                call.span,
                "explicit save",
                help="remove it: every created aggregate, and every loaded one an operation was "
                "called on, is saved when the body ends",
            )
        elif method == "findById":
            ck.report(
                "loom.workflow-find-by-id",
                f"`{r}.findById` cannot be used in a workflow",
                mspan,
                "optional load",
                help=f"use getById for a must-exist load: "
                f"`{r}.getById(…)` answers 404 when the record is missing",
            )
        elif method != "getById":
            ck.report(
                "loom.unknown-operation",
                f"repository `{r}` has no method `{method}`",
                mspan,
                "unknown method",
                help=did_you_mean(method, REPO_METHODS) or "a workflow loads with `getById`",
            )
        elif position != "let":
            ck.report(
                "loom.workflow-nested-call" if position == "value" else "loom.invalid-statement",
                f"`{r}.getById(…)` must be the whole value of a `let`",
                call.span,
                "load not bound",
                help=f"bind it: `let x = {r}.getById(…)`",
            )
        else:
            agg = ctx.aggregates.get(repo.aggregate)
            if agg is None:
                return None
            idt = ir.IdType(agg.name, ctx.name)
            args = [x for x in call.args if isinstance(x, ast.Arg) and x.name is None]
            if len(call.args) != 1 or len(args) != 1:
                ck.report(
                    "loom.argument-count",
                    f"`{r}.getById` takes one id, got {len(call.args)} argument(s)",
                    call.span,
                    "one id expected",
                    help=f"pass {a(idt)}",
                )
                return None
            x = ck.expr(args[0].value, scope, idt)
            if not ck.mismatch(
                x, args[0].value, idt, f"`{r}.getById` needs {a(idt)}, but this is {a(x.type)}"
            ):
                return None
            return Load(name or "", r, agg.name, x)
        _args_only(ck, call, scope)
        return None
    if r in ctx.aggregates:
        agg = ctx.aggregates[r]
        if method != "create":
            ck.report(
                "loom.unknown-operation",
                f"`{r}.{method}` is not a workflow step: an aggregate "
                "is only created from a workflow",
                mspan,
                "unknown method",
                help=did_you_mean(method, ["create"])
                or f"create it with `{r}.create(…)`, or call operations on a local",
            )
            _args_only(ck, call, scope)
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
            _args_only(ck, call, scope)
            return None
        if agg.name not in ctx.repo_for:
            ck.report(
                "loom.workflow-missing-repository",
                f"`{r}` has no repository, so a created `{r}` could never be saved",
                call.callee.span,
                "nowhere to save it",
                secondary=[(agg.name_span, "aggregate declared here")],
                help=f"declare one: `repository {r}s for {r} {{ }}`",
            )
            _args_only(ck, call, scope)
            return None
        given = _create_args(ck, ctx, agg, call, scope)
        return Create(name or "", agg.name, given) if given is not None else None
    elsewhere = ck.prog.repositories_elsewhere(r, ctx.name)
    if elsewhere:
        other_ctx, other = elsewhere[0]
        ck.report(
            "loom.workflow-cross-context-repository",
            f"`{r}` is a repository of context `{other_ctx}`, not of `{ctx.name}`",
            recv.span,
            "another context's repository",
            secondary=[(other.name_span, f"declared in context `{other_ctx}`")],
            help="a workflow loads only through its own context's repositories; consume the "
            "other context's events into a local aggregate, or move the workflow",
        )
    else:
        candidates = [*ctx.repositories, *ctx.aggregates, *scope.names]
        ck.report(
            "loom.workflow-unknown-name",
            f"`{r}` is not a repository, an aggregate or a local of this workflow",
            recv.span,
            "unknown receiver",
            help=did_you_mean(r, candidates)
            or f"declare a repository: `repository {r} for <Aggregate> {{ }}`",
        )
    _args_only(ck, call, scope)
    return None


def _args_only(ck: Checker, call: ast.Call, scope: Scope) -> None:
    """Check the arguments of a refused call, so their own mistakes are still reported."""
    for arg in call.args:
        if isinstance(arg, ast.Record):
            for entry in arg.entries:
                ck.expr(entry.value, scope)
        else:
            ck.expr(arg.value, scope)


def _local_call(
    ck: Checker, call: ast.Call, scope: Scope, position: str, b: Binding, method: str, mspan: Span
) -> CallOp | None:
    b.used = True
    t = b.type
    if is_error(t):
        _args_only(ck, call, scope)
        return None
    if isinstance(t, ir.IdType):
        repo = _repo_name(scope.ctx, t.aggregate) or "its repository"
        ck.report(
            "loom.operation-on-id",
            f"`{b.name}` is {a(t)}, not {a(t.aggregate)}: load it before calling `{method}`",
            call.callee.span,
            "an id, not an aggregate",
            help=f"let {t.aggregate[:1].lower() + t.aggregate[1:]} = {repo}.getById({b.name})",
        )
        _args_only(ck, call, scope)
        return None
    if not isinstance(t, ir.AggregateType):
        ck.report(
            "loom.unknown-operation",
            f"{a(t)} has no operation `{method}`",
            mspan,
            "no such operation",
        )
        _args_only(ck, call, scope)
        return None
    agg = scope.ctx.aggregates[t.name]
    ops = {o.name: o for o in agg.operations}
    if method not in ops:
        fns = {f.name for f in agg.functions}
        if method in fns:
            ck.report(
                "loom.unsupported-call",
                f"`{method}` is a function of `{agg.name}`; workflows "
                "cannot call aggregate functions yet",
                mspan,
                "a function",
                help="compute the value inside an operation of the aggregate",
            )
        else:
            ck.report(
                "loom.unknown-operation",
                f"`{agg.name}` has no operation `{method}`",
                mspan,
                "unknown operation",
                help=did_you_mean(method, ops),
            )
        _args_only(ck, call, scope)
        return None
    op = ops[method]
    args = ck.check_args(call, scope, op.params, f"operation `{agg.name}.{method}`", op.name_span)
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
            help="operate on a local bound by `Repo.getById(…)` or `Agg.create(…)`",
        )
        return None
    b.mutated = True
    return CallOp(b.name, agg.name, method, args)


def _create_args(
    ck: Checker, ctx: ContextSymbols, agg: ast.Aggregate, call: ast.Call, scope: Scope
) -> dict[str, ir.Expr] | None:
    fields = agg.fields
    by_name = {f.name: f for f in fields}
    what = f"`{agg.name}.create`"
    ok = True
    pairs: list[tuple[ast.Field | None, ast.Arg]] = []
    records = [x for x in call.args if isinstance(x, ast.Record)]
    plain = [x for x in call.args if isinstance(x, ast.Arg)]
    if records and (len(records) > 1 or plain):
        ck.report(
            "loom.workflow-create-args",
            f"a record must be the only argument of {what}",
            call.span,
            "record mixed with other arguments",
            help="put every input in the one record: `{ x: a, y: b }`",
        )
        _args_only(ck, call, scope)
        return None
    entries = records[0].entries if records else plain
    positional = [x for x in entries if x.name is None]
    named = [x for x in entries if x.name is not None]
    if positional and named:
        first = named[0] if entries[0].name is None else positional[0]
        ck.report(
            "loom.workflow-create-args",
            f"{what} mixes positional and named arguments",
            first.span,
            "switches style here",
            help="name every argument (`x: a, y: b`), or none of them",
        )
        _args_only(ck, call, scope)
        return None
    if len(positional) > len(fields):
        extra = positional[len(fields)]
        ck.report(
            "loom.workflow-create-args",
            f"{what} takes at most {len(fields)} input"
            f"{'s' if len(fields) != 1 else ''} ({', '.join(f.name for f in fields)}), "
            f"but {len(positional)} were given",
            extra.span,
            "one too many",
            secondary=[(agg.name_span, "aggregate declared here")],
            help="remove the extra arguments",
        )
        ok = False
    for i, arg in enumerate(positional[: len(fields)]):
        pairs.append((fields[i], arg))
    seen: dict[str, ast.Arg] = {}
    for arg in named:
        assert arg.name is not None and arg.name_span is not None
        if arg.name in seen:
            ck.report(
                "loom.workflow-create-args",
                f"input `{arg.name}` of {what} is given twice",
                arg.name_span,
                "given again here",
                secondary=[(seen[arg.name].span, "first given here")],
                help="give it once",
            )
            ok = False
            ck.expr(arg.value, scope)
            continue
        seen[arg.name] = arg
        f = by_name.get(arg.name)
        if f is None:
            derived = any(d.name == arg.name for d in agg.derived)
            ck.report(
                "loom.workflow-create-args",
                f"`{arg.name}` is not an input of {what}",
                arg.name_span,
                "derived, not an input" if derived else "unknown input",
                help=did_you_mean(arg.name, by_name)
                or f"its inputs are {', '.join(f'`{n}`' for n in by_name) or 'none'}",
            )
            ok = False
            ck.expr(arg.value, scope)
            continue
        pairs.append((f, arg))
    given: dict[str, ir.Expr] = {}
    for f, arg in pairs:
        assert f is not None
        ft = ck.type_of(f.type)
        x = ck.expr(arg.value, scope, ft)
        if not ck.mismatch(
            x,
            arg.value,
            ft,
            f"input `{f.name}` of {what} is {a(ft)}, but this is {a(x.type)}",
            [(f.name_span, f"`{f.name}` is declared here as `{show(ft)}`")],
        ):
            ok = False
        given[f.name] = x
    missing = [
        f.name
        for f in fields
        if f.name not in given
        and f.default is None
        and not isinstance(ck.type_of(f.type), ir.OptionalType)
        and not f.type.is_optional
    ]
    if missing and ok:
        listed = ", ".join(f"`{n}`" for n in missing)
        ck.report(
            "loom.workflow-create-args",
            f"{what} leaves out the required input{'s' if len(missing) > 1 else ''} {listed}",
            call.callee.span,
            f"missing {listed}",
            secondary=[(agg.name_span, "aggregate declared here")],
            help="give every field that has no default and is not optional",
        )
        ok = False
    return given if ok else None
