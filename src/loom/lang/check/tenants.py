"""Tenanted contexts (`context Billing tenanted { … }`): what cannot work with a tenant column.

- An aggregate field named `tenant` would be the tenant column's name: `loom.tenant-field-reserved`.
- An in-process reaction runs as the system principal of its event's tenant (the runtime's
  `EventEnvelope.tenant`). An untenanted context reacting to a tenanted context's event would run
  without it, and could not scope what it writes: `loom.tenanted-event-untenanted-reactor`.
- A reaction of a tenanted context (a workflow's, a projection's) to an untenanted context's
  event has no tenant to run in: `loom.tenanted-unsupported`, rather than running unscoped. A
  channel may carry a tenanted context's event: its outbox row, broker message (`Loom-Tenant`),
  inbox row and dead letter carry the tenant, and its consumers run in it.

A context timer runs once per tenant that has rows (the runtime's `Recurring`); a correlated
workflow's instances, episodes and timeouts, and a projection's rows, are keyed by (tenant, key)
and run in their event's, request's or instance's tenant: none of them is refused.

`currentUser.tenant` outside a tenanted context is reported where it is typed (`principal.py`).
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.model.naming import column_name

TENANT_COLUMN = "tenant"


def check_tenants(ck: Checker) -> None:
    tenanted = {name for name, ctx in ck.prog.contexts.items() if ctx.tenanted is not None}
    if not tenanted:
        return
    for ctx in ck.prog.contexts.values():
        if ctx.tenanted is not None:
            _reserved_fields(ck, ctx)
            _unsupported(ck, ctx, tenanted)
        else:
            _untenanted_reactors(ck, ctx, tenanted)


def _reserved_fields(ck: Checker, ctx: ContextSymbols) -> None:
    for agg in ctx.aggregates.values():
        for f in agg.fields:
            if column_name(f.name) == TENANT_COLUMN:
                ck.report(
                    "loom.tenant-field-reserved",
                    f"field `{f.name}` of aggregate `{agg.name}` would be stored in the column "
                    f"`{TENANT_COLUMN}`, which a tenanted context keeps for the row's tenant",
                    f.name_span,
                    "collides with the tenant column",
                    secondary=[_tenanted_label(ctx)],
                    help=f"rename the field (e.g. `{f.name}Name`); the row's tenant is "
                    "`currentUser.tenant` in a request",
                )


def _tenanted_label(ctx: ContextSymbols) -> tuple[Span, str]:
    assert ctx.tenanted is not None
    return ctx.tenanted, f"context `{ctx.name}` is tenanted"


def _unsupported(ck: Checker, ctx: ContextSymbols, tenanted: set[str]) -> None:
    reactions: list[tuple[str, list[ast.Param]]] = []
    for wf in ctx.workflows.values():
        reactions += [(f"workflow `{wf.name}`", c.params) for c in wf.creates]
        reactions += [(f"workflow `{wf.name}`", on.params) for on in wf.ons]
    for proj in ctx.projections.values():
        reactions += [(f"projection `{proj.name}`", on.params) for on in proj.ons]
    for who, params in reactions:
        source = _event_context(ck, ctx, params)
        if source is None or source in tenanted:
            continue
        t = params[0].type
        ck.report(
            "loom.tenanted-unsupported",
            f"{who} in tenanted context `{ctx.name}` reacts to `{source}.{t.name}`, an event of "
            f"untenanted context `{source}`: it would run without a tenant",
            t.span,
            "an event with no tenant",
            secondary=[_tenanted_label(ctx)],
            help="react to it in an untenanted context, or make its context tenanted too "
            f"(`context {source} tenanted {{ … }}`): a reaction runs in its event's tenant",
        )


def _untenanted_reactors(ck: Checker, ctx: ContextSymbols, tenanted: set[str]) -> None:
    reactions: list[tuple[str, list[ast.Param], Span]] = []
    for wf in ctx.workflows.values():
        reactions += [(f"workflow `{wf.name}`", c.params, c.span) for c in wf.creates]
        reactions += [(f"workflow `{wf.name}`", on.params, on.span) for on in wf.ons]
    for proj in ctx.projections.values():
        reactions += [(f"projection `{proj.name}`", on.params, on.span) for on in proj.ons]
    for who, params, _span in reactions:
        source = _event_context(ck, ctx, params)
        if source is None or source not in tenanted:
            continue
        t = params[0].type
        other = ck.prog.contexts[source]
        ck.report(
            "loom.tenanted-event-untenanted-reactor",
            f"{who} of untenanted context `{ctx.name}` reacts to `{source}.{t.name}`, an event "
            f"of tenanted context `{source}`: it would run without the event's tenant",
            t.span,
            "an event of a tenanted context",
            secondary=[_tenanted_label(other)],
            help=f"react to it in a tenanted context (`context {ctx.name} tenanted {{ … }}`): "
            "a reaction there runs in the event's tenant; or consume an event of an untenanted "
            "context",
        )


def _event_context(ck: Checker, ctx: ContextSymbols, params: list[ast.Param]) -> str | None:
    """The context of the event a reaction takes (its one parameter), None if it takes none."""
    if len(params) != 1 or params[0].type.is_id or params[0].type.is_list:
        return None
    t = params[0].type
    home = ck.prog.contexts.get(t.qualifier) if t.qualifier else ctx
    if home is None or t.name not in home.events:
        return None
    return home.name
