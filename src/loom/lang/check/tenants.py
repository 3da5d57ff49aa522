"""Tenanted contexts (`context Billing tenanted { … }`): what cannot work with a tenant column.

- An aggregate field named `tenant` would be the tenant column's name: `loom.tenant-field-reserved`.
- An untenanted context reacting to a tenanted context's event would run without the tenant that
  raised it and could not scope what it writes: `loom.tenanted-event-untenanted-reactor`.
- What runs or is kept outside a request (a reaction, a correlated workflow's instances and timeouts, a
  context timer, a projection, a channel) has no tenant to run in yet: this increment scopes what
  a request does, so those are `loom.tenanted-unsupported` in a tenanted context rather than
  running unscoped.

`currentUser.tenant` outside a tenanted context is reported where it is typed (`principal.py`).
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.workflows import correlation
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
            _unsupported(ck, ctx)
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


def _unsupported(ck: Checker, ctx: ContextSymbols) -> None:
    def report(span: Span, what: str) -> None:
        ck.report(
            "loom.tenanted-unsupported",
            f"{what} in tenanted context `{ctx.name}`: it runs outside a request, and running "
            "it in a tenant is not supported yet",
            span,
            "runs outside a request",
            secondary=[_tenanted_label(ctx)],
            help="keep this context's work in requests (routes, command and query handlers), "
            "or move the reaction into an untenanted context that does not read this one's "
            "events; docs/language.md#tenants lists what a tenant scopes so far",
        )

    for wf in ctx.workflows.values():
        if correlation(ck, wf) is not None:
            report(wf.name_span, f"workflow `{wf.name}` keeps instances")
        for c in wf.creates:
            if _event_context(ck, ctx, c.params) is not None:
                report(c.span, f"workflow `{wf.name}` starts on an event")
        for on in wf.ons:
            report(on.span, f"workflow `{wf.name}` reacts to an event")
        for t in wf.timeouts:
            report(t.span, f"workflow `{wf.name}` handles a timeout")
    for tm in ctx.timers.values():
        report(tm.name_span, f"timer `{tm.name}` sweeps")
    for proj in ctx.projections.values():
        report(proj.name_span, f"projection `{proj.name}` folds events")
    for ch in ctx.channels.values():
        report(ch.name_span, f"channel `{ch.name}` carries events")


def _untenanted_reactors(ck: Checker, ctx: ContextSymbols, tenanted: set[str]) -> None:
    reactions: list[tuple[str, list[ast.Param], Span]] = []
    for wf in ctx.workflows.values():
        reactions += [(f"workflow `{wf.name}`", c.params, c.span) for c in wf.creates]
        reactions += [(f"workflow `{wf.name}`", on.params, on.span) for on in wf.ons]
    for proj in ctx.projections.values():
        reactions += [(f"projection `{proj.name}`", on.params, on.span) for on in proj.ons]
    for who, params, span in reactions:
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
            help="react to it in a tenanted context once those run reactions in the event's "
            "tenant (docs/language.md#tenants), or consume an event of an untenanted context",
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
