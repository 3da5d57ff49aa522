"""Repository calls in workflow and handler bodies: the reads (by id, by unique key, by criterion,
by retrieval, declared finds), `delete` / `remove`, and the refused explicit saves."""

from __future__ import annotations

from typing import Literal

from loom.lang.check import read_rules
from loom.lang.check.checker import Checker
from loom.lang.check.facts import (
    ApiStmt,
    CallOp,
    Create,
    DeleteStmt,
    Load,
    ReadLoad,
    ServiceStmt,
)
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.syntax import ast
from loom.lang.types import a, show
from loom.model import ir

# What a call in a body turns out to be: a statement fact, the source of an `if let`, a value, or
# nothing (it was reported).
Found = (
    Load
    | Create
    | CallOp
    | ReadLoad
    | ServiceStmt
    | ApiStmt
    | DeleteStmt
    | ir.Read
    | ir.Expr
    | None
)

SAVE_METHODS = ("save", "insert", "update", "add", "commit")
READS = ("getById", "findById", "getBy", "findBy", "find", "findAll", "run", "delete", "remove")


def args_only(ck: Checker, call: ast.Call, scope: Scope) -> None:
    """Check the arguments of a refused call, so their own mistakes are still reported."""
    for arg in call.args:
        for v in arg.entries if isinstance(arg, ast.Record) else [arg]:
            ck.expr(v.value, scope)


def query_refuses(ck: Checker, scope: Scope, what: str, span: Span) -> bool:
    """A query handler only reads; report `what` and answer True when this body is one."""
    if scope.body != "query":
        return False
    ck.report(
        "loom.query-handler-mutates",
        f"a queryHandler only reads, so it cannot {what}",
        span,
        "a change in a query",
        help="move the change into a commandHandler or a workflow",
    )
    return True


def find_cardinality(t: ast.TypeRef) -> Literal["one", "optional", "many"]:
    return "many" if t.is_list else "optional" if t.is_optional else "one"


def repo_call(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    position: str,
    name: str | None,
    repo: ast.Repository,
    method: str,
    mspan: Span,
) -> Found:
    r = repo.name
    if method in SAVE_METHODS:
        ck.report(
            "loom.workflow-explicit-save",
            f"`{r}.{method}(…)`: a workflow never saves explicitly",
            call.span,
            "explicit save",
            help="remove it: every created aggregate, and every loaded one an operation was "
            "called on, is saved when the body ends",
        )
        args_only(ck, call, scope)
        return None
    agg = scope.ctx.aggregates.get(repo.aggregate)
    if agg is None:
        args_only(ck, call, scope)
        return None
    if method in ("delete", "remove"):
        return _delete(ck, call, scope, position, repo, agg)
    read = build_read(ck, call, scope, repo, agg, method, mspan)
    if read is None:
        return None
    if read.cardinality == "optional" and position != "iflet":
        if method == "findById":
            ck.report(
                "loom.workflow-find-by-id",
                f"`{r}.findById` can only be the source of an `if let`",
                mspan,
                "optional load",
                help=f"use getById for a must-exist load (`{r}.getById(…)` answers 404 when the "
                f"record is missing), or branch: `if let x = {r}.findById(…) {{ … }}`",
            )
        else:
            ck.report(
                "loom.optional-read-outside-if-let",
                f"`{ck.text(call.span)}` may find nothing, so it can only be the source of an "
                "`if let`",
                call.span,
                "optional read",
                help=f"branch on it: `if let x = {ck.text(call.span)} {{ … }} else {{ … }}`",
            )
        return None
    if position == "iflet":
        if read.cardinality != "optional":
            what = "a list" if read.cardinality == "many" else "a must-exist read"
            ck.report(
                "loom.iflet-bad-source",
                f"`{ck.text(call.span)}` is {what}, not an optional read, so `if let` cannot "
                "branch on it",
                call.span,
                "not optional",
                help="branch on `find(C)`, `findBy(key: …)`, `findById(id)`, an optional declared "
                "find, or an optional value; bind a must-exist read with `let`",
            )
            return None
        return read
    if position != "let":
        ck.report(
            "loom.workflow-nested-call" if position == "value" else "loom.invalid-statement",
            f"`{ck.text(call.span)}` must be the whole value of a `let`",
            call.span,
            "read not bound",
            help=f"bind it: `let x = {ck.text(call.span)}`",
        )
        return None
    if read.kind == "by_id":
        return Load(name or "", r, agg.name, read.args[0][1])
    return ReadLoad(name or "", read)


def _delete(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    position: str,
    repo: ast.Repository,
    agg: ast.Aggregate,
) -> Found:
    assert isinstance(call.callee, ast.MemberAccess)
    what = f"`{repo.name}.{call.callee.name}`"
    if query_refuses(ck, scope, f"delete with {what}", call.span):
        args_only(ck, call, scope)
        return None
    if position != "stmt":
        ck.report(
            "loom.invalid-statement",
            f"{what} is a statement of its own and has no value",
            call.span,
            "delete used as a value",
            help=f"write `{repo.name}.{call.callee.name}(x)` on its own line",
        )
        args_only(ck, call, scope)
        return None
    arg = call.args[0] if len(call.args) == 1 else None
    v = arg.value if isinstance(arg, ast.Arg) and arg.name is None else None
    b = scope.names.get(v.name) if isinstance(v, ast.Name) else None
    if b is None or b.kind not in ("loaded", "created") or b.aggregate != agg.name:
        ck.report(
            "loom.unsupported-call",
            f"{what} takes one local bound to a loaded or created `{agg.name}`",
            call.span,
            "not a bound aggregate",
            help=f"load it first: `let x = {repo.name}.getById(id)` then `{repo.name}.delete(x)`",
        )
        args_only(ck, call, scope)
        return None
    b.used = True
    b.deleted = True
    return DeleteStmt(b.name, repo.name, agg.name)


def _one_positional(ck: Checker, call: ast.Call, what: str, need: str) -> ast.Expr | None:
    args = [x for x in call.args if isinstance(x, ast.Arg) and x.name is None]
    if len(call.args) != 1 or len(args) != 1:
        ck.report(
            "loom.argument-count",
            f"{what} takes one argument, got {len(call.args)}",
            call.span,
            "one argument expected",
            help=f"pass {need}",
        )
        return None
    return args[0].value


def build_read(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    repo: ast.Repository,
    agg: ast.Aggregate,
    method: str,
    mspan: Span,
) -> ir.Read | None:
    r = repo.name
    if method in ("getById", "findById"):
        idt = ir.IdType(agg.name, scope.ctx.name)
        e = _one_positional(ck, call, f"`{r}.{method}`", a(idt))
        if e is None:
            args_only(ck, call, scope)
            return None
        x = ck.expr(e, scope, idt)
        if not ck.mismatch(x, e, idt, f"`{r}.{method}` needs {a(idt)}, but this is {a(x.type)}"):
            return None
        card = "one" if method == "getById" else "optional"
        return ir.Read(r, agg.name, "by_id", card, (("id", x),))  # type: ignore[arg-type]
    if method in ("getBy", "findBy"):
        return _by_key(ck, call, scope, repo, agg, method)
    if method in ("find", "findAll", "run"):
        e = _one_positional(
            ck, call, f"`{r}.{method}`", "a retrieval" if method == "run" else "a criterion"
        )
        if e is None:
            args_only(ck, call, scope)
            return None
        table = scope.ctx.retrievals if method == "run" else scope.ctx.criteria
        kind = "retrieval" if method == "run" else "criterion"
        callee = e.callee if isinstance(e, ast.Call) else e
        target = table.get(callee.name) if isinstance(callee, ast.Name) else None
        if target is None or target.aggregate != agg.name:
            known = [n for n, d in table.items() if d.aggregate == agg.name]
            ck.report(
                f"loom.unknown-{kind}",
                f"`{ck.text(e.span)}` is not a {kind} of `{agg.name}`",
                e.span,
                f"not a {kind}",
                help=did_you_mean(ck.text(callee.span), known)
                or f"declare one: `{kind} Name(params) of {agg.name} …`",
            )
            if isinstance(e, ast.Call):
                args_only(ck, e, scope)
            return None
        ck.refer(callee.span, target.name_span)
        if isinstance(target, ast.Criterion) and read_rules.refuse_use(
            ck, target, e.span, f"`{r}.{method}`"
        ):
            return None
        if isinstance(e, ast.Call):
            args = ck.check_args(
                e, scope, target.params, f"{kind} `{target.name}`", target.name_span
            )
        else:
            args = ()
            if target.params:
                ck.report(
                    "loom.argument-count",
                    f"{kind} `{target.name}` takes {len(target.params)} argument(s)",
                    e.span,
                    "arguments missing",
                    secondary=[(target.name_span, "declared here")],
                    help=f"pass them: `{target.name}(…)`",
                )
        if len(args) != len(target.params):
            return None
        card = "optional" if method == "find" else "many"
        named = tuple((p.name, x) for p, x in zip(target.params, args, strict=False))
        return ir.Read(r, agg.name, kind, card, named, target.name)  # type: ignore[arg-type]
    finds = {f.name: f for f in repo.finds}
    f = finds.get(method)
    if f is None:
        ck.report(
            "loom.unknown-operation",
            f"repository `{r}` has no method `{method}`",
            mspan,
            "unknown method",
            help=did_you_mean(method, [*READS, *finds])
            or "a body reads with getById, getBy, find, findAll, run or a declared find",
        )
        args_only(ck, call, scope)
        return None
    ck.refer(mspan, f.name_span)
    args = ck.check_args(call, scope, f.params, f"find `{r}.{f.name}`", f.name_span)
    if len(args) != len(f.params):
        return None
    named = tuple((p.name, x) for p, x in zip(f.params, args, strict=False))
    card = find_cardinality(f.result)
    return ir.Read(r, agg.name, "find", card, named, f.name)


def _by_key(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    repo: ast.Repository,
    agg: ast.Aggregate,
    method: str,
) -> ir.Read | None:
    named = [x for x in call.args if isinstance(x, ast.Arg) and x.name is not None]
    keys = [tuple(n for n, _ in u.fields) for u in agg.uniques]
    given = [x.name for x in named if x.name is not None]
    key = next((k for k in keys if sorted(k) == sorted(given)), None)
    if len(named) != len(call.args) or key is None or len(set(given)) != len(given):
        shown = " or ".join("(" + ", ".join(k) + ")" for k in keys) or "none"
        ck.report(
            "loom.unknown-key",
            f"`{repo.name}.{method}` needs the fields of exactly one unique key of `{agg.name}`, "
            "by name",
            call.span,
            "not a unique key",
            secondary=[(agg.name_span, f"unique keys: {shown}")],
            help=f"name the key's fields, e.g. `{repo.name}.{method}({keys[0][0]}: …)`"
            if keys
            else f"declare a key in `{agg.name}`: `unique (field)`",
        )
        args_only(ck, call, scope)
        return None
    fields = {f.name: f for f in agg.fields}
    values: dict[str, ir.Expr] = {}
    ok = True
    for x in named:
        assert x.name is not None
        ft = ck.type_of(fields[x.name].type) if x.name in fields else None
        v = ck.expr(x.value, scope, ft)
        if ft is not None and not ck.mismatch(
            v, x.value, ft, f"key field `{x.name}` is {a(ft)}, but this is {a(v.type)}"
        ):
            ok = False
        values[x.name] = v
    if not ok:
        return None
    card = "one" if method == "getBy" else "optional"
    args = tuple((k, values[k]) for k in key)
    _ = show
    return ir.Read(repo.name, agg.name, "by_key", card, args, None, key)  # type: ignore[arg-type]
