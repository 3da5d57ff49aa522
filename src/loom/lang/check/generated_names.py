"""Names that collide once generated: two declarations the model keeps apart but whose generated
spellings meet — the same route (`/api/items` for `Item` in two contexts, a workflow `placeOrder` in
two contexts), the same OpenAPI operationId (a workflow and a handler of one name in two contexts,
an operation named `list`; a find is `by…`, never a route's verb), or the same column or route
segment within one aggregate (`fooBar` and `foo_bar`). Without this check the generated service
would silently serve only one of them, or give generated clients two methods of one name."""

from __future__ import annotations

from loom.lang.diagnostics import Sink, Span
from loom.lang.names.symbols import Program, kind_of
from loom.lang.syntax import ast
from loom.model.naming import ROUTE_VERBS, operation_id, plural_snake, snake


def check_generated_names(prog: Program, sink: Sink) -> None:
    routes: dict[str, tuple[str, Span]] = {}
    reported: set[tuple[int, int]] = set()  # (first, second) spans: one report a pair

    def claim(route: str, what: str, span: Span, fix: str) -> None:
        first = routes.get(route)
        if first is None:
            routes[route] = (what, span)
            return
        reported.add((id(first[1]), id(span)))
        sink.report(
            "loom.generated-name-collision",
            f"{what} and {first[0]} would both be served at `{route}`",
            span,
            "second claim",
            secondary=[(first[1], "first claim")],
            help=fix,
        )

    for ctx in prog.contexts.values():
        for agg in ctx.aggregates.values():
            claim(
                f"/api/{plural_snake(agg.name)}",
                f"aggregate `{ctx.name}.{agg.name}`",
                agg.name_span,
                "aggregate routes are not prefixed by their context; rename one of the aggregates",
            )
            _check_members(agg, sink)
        records: list[ast.ValueObject | ast.Payload] = [
            *ctx.values.values(),
            *ctx.payloads.values(),
        ]
        for rec in records:
            # a payload may share its name with a workflow or handler: a type and an entry point
            # meet in no generated name (the payload's wire models are `<Name>Input` / `<Name>Out`,
            # and one taking a payload as its only parameter gets no input model of its own)
            _check_members(rec, sink)
        for wf in ctx.workflows.values():
            claim(
                f"/api/workflows/{snake(wf.name)}",
                f"workflow `{ctx.name}.{wf.name}`",
                wf.name_span,
                "workflow routes are not prefixed by their context; rename one of the workflows",
            )
        for proj in ctx.projections.values():
            claim(
                f"/api/projections/{snake(proj.name)}",
                f"projection `{ctx.name}.{proj.name}`",
                proj.name_span,
                "projection routes are not prefixed by their context; rename one of the "
                "projections",
            )
        for h in ctx.handlers.values():
            kind = "commands" if h.kind == "command" else "queries"
            claim(
                f"/api/{kind}/{snake(h.name)}",
                f"{h.kind}Handler `{ctx.name}.{h.name}`",
                h.name_span,
                "handler routes are not prefixed by their context; rename one of the handlers",
            )
    _check_operation_ids(prog, sink, reported)


def _check_operation_ids(prog: Program, sink: Sink, reported: set[tuple[int, int]]) -> None:
    """Two routes of one operationId (`naming.operation_id`): paths apart, names the same."""
    ids: dict[str, tuple[str, Span]] = {}

    def claim(op_id: str, what: str, span: Span) -> None:
        first = ids.setdefault(op_id, (what, span))
        pair = (id(first[1]), id(span))
        if first[1] is span or pair in reported:
            return
        reported.add(pair)
        sink.report(
            "loom.generated-name-collision",
            f"{what} and {first[0]} would both have the OpenAPI operationId `{op_id}` (the "
            "method name of a generated client)",
            span,
            "second claim",
            secondary=[(first[1], "first claim")],
            help="rename one of them (operationIds are not prefixed by their context; "
            "docs/http.md#operation-ids)",
        )

    for ctx in prog.contexts.values():
        for wf in ctx.workflows.values():
            claim(operation_id(None, wf.name), f"workflow `{ctx.name}.{wf.name}`", wf.name_span)
        for h in ctx.handlers.values():
            what = f"{h.kind}Handler `{ctx.name}.{h.name}`"
            claim(operation_id(None, h.name), what, h.name_span)
        owners: list[tuple[str, str, Span]] = [
            *(
                (f"aggregate `{ctx.name}.{a.name}`", a.name, a.name_span)
                for a in ctx.aggregates.values()
            ),
            *(
                (f"projection `{ctx.name}.{p.name}`", p.name, p.name_span)
                for p in ctx.projections.values()
            ),
            # a workflow with state has instance routes (`<Workflow>_getInstance`)
            *(
                (f"workflow `{ctx.name}.{w.name}`", w.name, w.name_span)
                for w in ctx.workflows.values()
                if w.state
            ),
        ]
        for what, name, span in owners:
            for verb in ROUTE_VERBS:  # each owner's own routes, whichever it has
                claim(operation_id(name, verb), what, span)
        for agg in ctx.aggregates.values():
            for m in agg.members:
                if isinstance(m, ast.Operation) and not (m.private or m.internal):
                    what = f"operation `{agg.name}.{m.name}`"
                    claim(operation_id(agg.name, m.name), what, m.name_span)


def _check_members(agg: ast.Aggregate | ast.ValueObject | ast.Payload, sink: Sink) -> None:
    """Members whose names differ but whose snake_case spellings (columns, attributes, operation
    routes) are the same; for a value object or payload, its fields (attributes, stored keys)."""
    seen: dict[str, tuple[str, Span]] = {}
    members = agg.members if isinstance(agg, ast.Aggregate) else agg.fields
    what = "aggregate" if isinstance(agg, ast.Aggregate) else kind_of(agg)
    for m in members:
        name = getattr(m, "name", None)
        span = getattr(m, "name_span", None)
        if not isinstance(name, str) or span is None:
            continue
        key = snake(name)
        first = seen.get(key)
        if first is None:
            seen[key] = (name, span)
        elif first[0] != name:  # same spelling twice is a duplicate declaration, reported elsewhere
            sink.report(
                "loom.generated-name-collision",
                f"`{name}` and `{first[0]}` in {what} `{agg.name}` are both `{key}` in the "
                "generated service",
                span,
                "second spelling",
                secondary=[(first[1], "first spelling")],
                help="give the members names that differ by more than case or underscores",
            )
