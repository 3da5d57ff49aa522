"""Context-level declarations besides aggregates and workflows: unique keys and factories of
aggregates, declared finds of repositories, criteria, retrievals and domain services."""

from __future__ import annotations

import re

from loom.lang.check import emits, filters, lists, operations, read_rules, times
from loom.lang.check.calls import local_call, mutated_params
from loom.lang.check.checker import Checker
from loom.lang.check.facts import CallOp, FindFact, RetrievalFact
from loom.lang.check.reads import find_cardinality
from loom.lang.check.records import holds_record, refuse_value_query, value_read
from loom.lang.check.scope import Binding, Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import a, is_error, show
from loom.model import ir
from loom.model.builtins import BUILTINS


def check_context(ck: Checker, ctx: ContextSymbols) -> None:
    for agg in ctx.aggregates.values():
        _uniques(ck, agg)
        _factory(ck, ctx, agg)
    for repo in ctx.repositories.values():
        _finds(ck, ctx, repo)
        filters.check_repository_filters(ck, ctx, repo)
    for c in ctx.criteria.values():
        _criterion(ck, ctx, c)
    for r in ctx.retrievals.values():
        _retrieval(ck, ctx, r)
    for proj in ctx.projections.values():
        _projection_filter(ck, ctx, proj)
    for svc in ctx.services.values():
        for m in svc.methods:
            _service_method(ck, ctx, svc, m)


def _uniques(ck: Checker, agg: ast.Aggregate) -> None:
    fields = {f.name: f for f in agg.fields}
    for u in agg.uniques:
        for name, span in u.fields:
            if name not in fields:
                ck.report(
                    "loom.unknown-field",
                    f"unique key of `{agg.name}` names `{name}`, which is not a stored field",
                    span,
                    "unknown field",
                    help=did_you_mean(name, fields) or "a unique key lists stored fields",
                )
            elif holds_record(ft := ck.type_of(fields[name].type)):
                refuse_value_query(ck, f"a unique key of `{agg.name}`", name, ft, span)


def _factory(ck: Checker, ctx: ContextSymbols, agg: ast.Aggregate) -> None:
    f = agg.factory
    if f is None:
        return
    assigned = {
        s.target.name
        for s in f.body
        if isinstance(s, ast.Assign) and isinstance(s.target, ast.Name) and s.op == ":="
    }
    missing = [
        fd.name
        for fd in agg.fields
        if fd.name not in assigned and fd.default is None and not fd.type.is_optional
    ]
    if missing:
        listed = ", ".join(f"`{n}`" for n in missing)
        ck.report(
            "loom.factory-unassigned-field",
            f"the `create` of `{agg.name}` leaves {listed} unset, and "
            f"{'they have' if len(missing) > 1 else 'it has'} no default",
            f.span,
            f"{listed} never assigned",
            help=f"assign it in the body (`{missing[0]} := …`), or give the field a default",
        )


_FIND = re.compile(r"^by([A-Z].*)$")


def find_fields(name: str) -> list[str] | None:
    """`byCode` -> [code], `byOwnerAndNumber` -> [owner, number]; None when the name has no shape."""
    m = _FIND.match(name)
    if not m:
        return None
    parts = re.split(r"And(?=[A-Z])", m.group(1))
    return [p[:1].lower() + p[1:] for p in parts]


def _finds(ck: Checker, ctx: ContextSymbols, repo: ast.Repository) -> None:
    agg = ctx.aggregates.get(repo.aggregate)
    if agg is None:
        return
    fields = {f.name: f for f in agg.fields}
    seen: set[str] = set()
    for f in repo.finds:
        if f.name in seen:
            ck.report(
                "loom.duplicate-declaration",
                f"find `{f.name}` is declared twice in `{repo.name}`",
                f.name_span,
                "declared again here",
            )
        seen.add(f.name)
        names = find_fields(f.name)
        ck.facts.finds[f] = FindFact(tuple(names or ()), find_cardinality(f.result))
        if names is None or any(n not in fields for n in names) or len(names) != len(f.params):
            ck.report(
                "loom.find-field",
                f"find `{f.name}` does not name fields of `{agg.name}` one per parameter",
                f.name_span,
                "no field mapping",
                help="name it `by` + the fields it matches, e.g. `find byCode(code: string)`; "
                f"fields of `{agg.name}`: {', '.join(fields) or 'none'}",
            )
        else:
            _one_of_many(ck, agg, repo, f, names)
            for n, p in zip(names, f.params, strict=False):
                ft, pt = ck.type_of(fields[n].type), ck.type_of(p.type)
                if holds_record(ft):
                    refuse_value_query(ck, f"find `{f.name}`", n, ft, f.name_span)
                elif not is_error(ft) and not is_error(pt) and ft != pt:
                    ck.report(
                        "loom.type-mismatch",
                        f"parameter `{p.name}` of `{f.name}` is {a(pt)}, but the field `{n}` is "
                        f"{a(ft)}",
                        p.type.span,
                        f"this is {a(pt)}",
                        help=f"declare it `{p.name}: {show(ft)}`",
                    )
        rt = ck.type_of(f.result)
        bare = rt.inner if isinstance(rt, ir.OptionalType) else rt
        bare = bare.element if isinstance(bare, ir.ListType) else bare
        if not is_error(rt) and bare != ir.AggregateType(agg.name, ctx.name):
            ck.report(
                "loom.type-mismatch",
                f"find `{f.name}` answers {a(rt)}; a find of `{repo.name}` answers "
                f"`{agg.name}`, `{agg.name}?` or `{agg.name}[]`",
                f.result.span,
                "not this repository's aggregate",
            )


def _one_of_many(
    ck: Checker, agg: ast.Aggregate, repo: ast.Repository, f: ast.RepoFind, names: list[str]
) -> None:
    """`loom.find-one-not-unique`: a find answering one aggregate on fields that hold no unique
    key may match several rows; it then answers the first by id, which is rarely what was meant."""
    if find_cardinality(f.result) == "many":
        return
    keys = [tuple(n for n, _ in u.fields) for u in agg.uniques]
    if any(set(k) <= set(names) for k in keys):
        return
    shown = " or ".join("(" + ", ".join(k) + ")" for k in keys) or "none"
    fields = ", ".join(names)
    ck.report(
        "loom.find-one-not-unique",
        f"find `{f.name}` answers one `{agg.name}`, but ({fields}) is not a unique key: when "
        "several rows match it answers the first by id",
        f.result.span,
        "one of possibly many",
        secondary=[(agg.name_span, f"unique keys: {shown}")],
        help=f"declare `unique ({fields})` in `{agg.name}`, or answer a list: "
        f"`find {f.name}(...): {agg.name}[]`",
    )


_SQL_OK = (
    ir.Literal_,
    ir.SelfField,
    ir.Param,
    ir.EnumMember,
    ir.Unary,
    ir.Binary,
    ir.Now,
)


def untranslatable(x: ir.Expr) -> ir.Expr | None:
    """The first part of a criterion SQL cannot express, or None."""
    if isinstance(x, ir.CurrentUser):
        return None  # a read rule's principal: bound from Python when the read runs
    if isinstance(x, ir.Member) and _reads_param(x):
        return None  # a field of a value-typed parameter: a plain value, bound from Python
    if isinstance(x, ir.BuiltinCall):
        if not times.reads_field(x):
            return None  # computed from parameters: bound from Python
        if not BUILTINS[x.function].sql or lists.stored_as_json(x):
            return x
        for arg in x.args:
            bad = untranslatable(arg)
            if bad is not None:
                return bad
        return None
    if times.computed(x):
        # `asOf - 1d` is bound from Python; `dueAt + 1d` would be arithmetic on a column
        return x if times.reads_field(x) else None
    if not isinstance(x, _SQL_OK) or (isinstance(x, ir.SelfField) and x.kind == "derived"):
        return x
    if isinstance(x, ir.Unary):
        return untranslatable(x.operand)
    if isinstance(x, ir.Binary) and isinstance(x.type, ir.ListType):
        return x  # a list joined: the list columns are JSON text, which SQL cannot join
    if isinstance(x, ir.Binary) and x.op == "in":
        return untranslatable(x.left) or lists.untranslatable_membership(x)
    if isinstance(x, ir.Binary):
        return untranslatable(x.left) or untranslatable(x.right)
    return None


def _reads_param(x: ir.Expr) -> bool:
    while isinstance(x, ir.Member):
        x = x.obj
    return isinstance(x, ir.Param)


def _criterion(ck: Checker, ctx: ContextSymbols, c: ast.Criterion) -> None:
    agg = ctx.aggregates.get(c.aggregate)
    if agg is None:
        ck.report(
            "loom.unknown-aggregate",
            f"criterion `{c.name}` is of `{c.aggregate}`, which is not an aggregate of `{ctx.name}`",
            c.aggregate_span,
            "no such aggregate",
            help=did_you_mean(c.aggregate, ctx.aggregates),
        )
        return
    ck.refer(c.aggregate_span, agg.name_span)
    scope = Scope(ctx, agg, "criterion")
    for p in c.params:
        scope.names.setdefault(p.name, Binding(p.name, ck.type_of(p.type), p.name_span, "param"))
    x = ck.condition(c.condition, scope, "a criterion")
    ck.facts.exprs[c.condition] = x
    read_rules.refuse_parameters(ck, c)
    stored = value_read(x)
    if stored is not None:
        refuse_value_query(ck, f"criterion `{c.name}`", stored[0], stored[1], c.condition.span)
        return
    bad = untranslatable(x)
    if bad is not None and not is_error(bad.type):
        ck.report(
            "loom.criterion-not-translatable",
            f"criterion `{c.name}` uses `{bad.text}`, which cannot be translated to SQL",
            c.condition.span,
            "not translatable",
            help=lists.criterion_help(bad)
            or (
                _BUILTIN_HELP.format(bad.function)
                if isinstance(bad, ir.BuiltinCall)
                else _CRITERION_HELP
            ),
        )


_CRITERION_HELP = (
    "a criterion compares stored fields with parameters, literals, enum members and `now()`, "
    "joined by `&&`, `||`, `!` and arithmetic, the string functions `length`, `contains`, "
    "`startsWith`, `lower`, `upper`, `trim`, the date parts `year`, `month`, `day`, "
    "`isPresent(field)` and `field in listParameter`; no other "
    "function calls, derived values, "
    "conditionals or lists; a time is computed from parameters only (`dueAt < asOf - 1d`, not "
    "`dueAt + 1d < asOf`)"
)
_BUILTIN_HELP = (
    "`{}` of a stored field is computed by the service, not the database; compare the stored "
    "field with a value computed from the parameters instead (`validTo < addMonths(asOf, 1)`), "
    "or filter the loaded values in a query handler"
)


def _projection_filter(ck: Checker, ctx: ContextSymbols, proj: ast.Projection) -> None:
    """`filter <condition>` of a projection: a `bool` over its fields that SQL can express."""
    for extra in proj.filters[1:]:
        ck.report(
            "loom.duplicate-declaration",
            f"projection `{proj.name}` declares a second `filter`",
            extra.span,
            "a second read rule",
            secondary=[(proj.filters[0].span, "the first one")],
            help="join the conditions in one: `filter a || b` (or `a && b`)",
        )
    if not proj.filters:
        return
    cond = proj.filters[0]
    row = ast.ValueObject(proj.name, proj.name_span, proj.fields, [], proj.span)
    x = ck.condition(cond, Scope(ctx, None, "criterion", record=row), "a projection's filter")
    ck.facts.exprs[cond] = x
    bad = untranslatable(x)
    if bad is not None and not is_error(bad.type):
        ck.report(
            "loom.criterion-not-translatable",
            f"the filter of projection `{proj.name}` uses `{bad.text}`, which cannot be "
            "translated to SQL",
            cond.span,
            "not translatable",
            help="a projection's filter compares its fields with literals, enum members and "
            "`currentUser`, joined by `&&`, `||` and `!`, as a criterion does",
        )


def _retrieval(ck: Checker, ctx: ContextSymbols, r: ast.Retrieval) -> None:
    if r.aggregate not in ctx.aggregates:
        ck.report(
            "loom.unknown-aggregate",
            f"retrieval `{r.name}` is of `{r.aggregate}`, which is not an aggregate of `{ctx.name}`",
            r.aggregate_span,
            "no such aggregate",
            help=did_you_mean(r.aggregate, ctx.aggregates),
        )
        return
    ck.refer(r.aggregate_span, ctx.aggregates[r.aggregate].name_span)
    scope = Scope(ctx, None, "retrieval")
    for p in r.params:
        scope.names.setdefault(
            p.name, Binding(p.name, ck.type_of(p.type), p.name_span, "param", used=True)
        )
    w = r.where
    callee = w.callee if isinstance(w, ast.Call) else w
    c = ctx.criteria.get(callee.name) if isinstance(callee, ast.Name) else None
    if c is None or c.aggregate != r.aggregate:
        known = [n for n, d in ctx.criteria.items() if d.aggregate == r.aggregate]
        ck.report(
            "loom.unknown-criterion",
            f"`{ck.text(w.span)}` is not a criterion of `{r.aggregate}`",
            w.span,
            "not a criterion",
            help=did_you_mean(ck.text(callee.span), known)
            or f"declare one: `criterion Name(params) of {r.aggregate} = …`",
        )
        return
    if read_rules.refuse_use(ck, c, w.span, f"retrieval `{r.name}`"):
        return
    if isinstance(w, ast.Call):
        args = ck.check_args(w, scope, c.params, f"criterion `{c.name}`", c.name_span)
    else:
        args = ()
        if c.params:
            ck.report(
                "loom.argument-count",
                f"criterion `{c.name}` takes {len(c.params)} argument(s)",
                w.span,
                "arguments missing",
                secondary=[(c.name_span, "declared here")],
            )
    ck.facts.retrievals[r] = RetrievalFact(c.name, args)


def _service_method(
    ck: Checker, ctx: ContextSymbols, svc: ast.DomainService, m: ast.ServiceMethod
) -> None:
    scope = Scope(ctx, None, "service")
    mutated = mutated_params(ck, scope, m)
    ck.facts.service_mutates[m] = tuple(m.params[i].name for i in mutated)
    for p in m.params:
        t = ck.type_of(p.type)
        kind = "loaded" if isinstance(t, ir.AggregateType) else "param"
        b = Binding(p.name, t, p.name_span, kind, t.name if kind == "loaded" else None, used=True)  # type: ignore[union-attr]
        scope.names.setdefault(p.name, b)
    rt = ck.type_of(m.result) if m.result is not None else None
    if m.value is not None:
        x = ck.root(m.value, scope, rt)
        if rt is not None:
            ck.mismatch(x, m.value, rt, f"`{svc.name}.{m.name}` returns {a(rt)}, not {a(x.type)}")
        return
    for stmt in m.body or []:
        e = stmt.expr if isinstance(stmt, ast.ExprStmt) else None
        if isinstance(e, ast.Call) and isinstance(e.callee, ast.MemberAccess):
            recv = e.callee.obj
            target = scope.names.get(recv.name) if isinstance(recv, ast.Name) else None
            if target is not None and isinstance(target.type, ir.AggregateType):
                name, span = e.callee.name, e.callee.name_span
                found = local_call(ck, e, scope, "stmt", target, name, span)
                if isinstance(found, CallOp):
                    ck.facts.stmts[stmt] = found
                continue
            ck.report(
                "loom.service-impure",
                "a domain service method only calls operations on its aggregate parameters",
                e.span,
                "not an operation call on a parameter",
                help="load and create in the workflow or handler, and pass the aggregates in",
            )
            continue
        if isinstance(stmt, ast.Return):
            if rt is None:
                ck.report(
                    "loom.workflow-unexpected-return",
                    f"`{svc.name}.{m.name}` declares no result type",
                    stmt.span,
                    "nothing to return",
                )
                ck.root(stmt.value, scope)
            else:
                x = ck.root(stmt.value, scope, rt)
                ck.mismatch(x, stmt.value, rt, f"`{m.name}` returns {a(rt)}, not {a(x.type)}")
            continue
        if isinstance(stmt, (ast.Schedule, ast.Cancel, ast.Complete)):
            operations.operation_stmt(ck, stmt, scope)
            continue
        if isinstance(stmt, (ast.Let, ast.Precondition, ast.Emit, ast.NotFound)):
            if isinstance(stmt, ast.Emit):
                emits.check_emit(ck, stmt, scope)
            else:
                operations.operation_stmt(ck, stmt, scope)
            continue
        ck.report(
            "loom.service-impure",
            "this statement is not allowed in a domain service method",
            stmt.span,
            "not allowed here",
            help="a service method calls operations on its aggregate parameters, checks "
            "preconditions, names values, emits and returns",
        )
    ck.warn_unused(scope)
