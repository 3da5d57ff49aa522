"""Every type written in a declaration (fields, parameters, results), resolved once before any rule
reads it: a body may use an event or a value object declared further down, or in another file."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.names.symbols import ContextSymbols
from loom.lang.names.type_refs import resolve_type
from loom.lang.syntax import ast


def declare_types(ck: Checker, ctx: ContextSymbols) -> None:
    def res(t: ast.TypeRef | None, value: bool = True) -> None:
        if t is not None:
            ck.facts.types[t] = resolve_type(ctx, t, ck.sink, value=value, prog=ck.prog)

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
        for ef in ev.fields:
            res(ef.type)
    records: list[ast.ValueObject | ast.Payload | ast.Projection] = [
        *ctx.values.values(),
        *ctx.payloads.values(),
        *ctx.projections.values(),
    ]
    for rec in records:
        for f in rec.fields:
            res(f.type)
    for wf in ctx.workflows.values():
        for f in wf.state:
            res(f.type)
        for fn in wf.functions:
            for p in fn.params:
                res(p.type)
            res(fn.result)
    queries: list[ast.Criterion | ast.Retrieval] = [
        *ctx.criteria.values(),
        *ctx.retrievals.values(),
    ]
    for d in queries:
        for p in d.params:
            res(p.type)
    for repo in ctx.repositories.values():
        for find in repo.finds:
            for p in find.params:
                res(p.type)
            res(find.result, value=False)
    for svc in ctx.services.values():
        for method in svc.methods:
            for p in method.params:
                res(p.type, value=False)
            res(method.result, value=False)
