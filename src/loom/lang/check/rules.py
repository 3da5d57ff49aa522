"""The rules of the checker, in the order they run: one entry per construct.

Order matters in two ways only. Every declared type is resolved before a rule reads one, and value
objects come before aggregates (a default or a body may construct one). The program-wide rules at
the end read the facts the per-declaration rules recorded (the typed gates, the calls of each
reaction). Diagnostics are sorted by position afterwards, so the order never shows in the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loom.lang.check import (
    aggregates,
    anonymous,
    apis,
    bypass,
    declarations,
    declared_types,
    entries,
    entry_gates,
    event_fields,
    events,
    generated_names,
    headers,
    principal,
    read_only,
    read_rules,
    records,
    renames,
    tenants,
    timeout_refusals,
    topology,
    workflows,
)
from loom.lang.check.checker import Checker


@dataclass(frozen=True)
class Rule:
    construct: str  # what it checks, as a reader would name it
    run: Callable[[Checker], None]


def _declared_types(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        declared_types.declare_types(ck, ctx)


def _records(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        records.check_records(ck, ctx)


def _event_defaults(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        event_fields.check_event_defaults(ck, ctx)


def _aggregates(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for agg in ctx.aggregates.values():
            aggregates.check_aggregate(ck, ctx, agg)


def _declarations(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        declarations.check_context(ck, ctx)


def _workflows(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for wf in ctx.workflows.values():
            workflows.check_workflow(ck, ctx, wf)


def _handlers(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for h in ctx.handlers.values():
            entries.check_handler(ck, ctx, h)


def _timers(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for tm in ctx.timers.values():
            entries.check_timer(ck, ctx, tm)


def _projections(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for proj in ctx.projections.values():
            events.check_projection(ck, ctx, proj)


def _generated_names(ck: Checker) -> None:
    generated_names.check_generated_names(ck.prog, ck.sink)


RULES: tuple[Rule, ...] = (
    Rule("declaration headers: traits, isolation levels, entry points", headers.check_headers),
    Rule("declared types: fields, parameters, results", _declared_types),
    Rule("value objects and payloads", _records),
    Rule("defaults of event fields", _event_defaults),
    Rule("aggregates: defaults, derived values, invariants, functions, operations", _aggregates),
    Rule("unique keys, factories, finds, filters, criteria, retrievals, services", _declarations),
    Rule("resources: `kind: api` bindings of another context", apis.check_resources),
    Rule("workflows: state, functions, creates, reactions, applies, timeouts", _workflows),
    Rule("`once` workflows: an instance to run once", headers.check_once),
    Rule("command and query handlers", _handlers),
    Rule("timers", _timers),
    Rule("projections", _projections),
    Rule("channels", events.check_channels),
    Rule("deployables: their contexts, each in exactly one", topology.check_deployables),
    Rule("channel sources, and the `source` of channels", topology.check_channel_sources),
    Rule("events crossing deployables: carried by a channel", topology.check_crossings),
    Rule(
        "`requires` gates of factories, workflow creates and handlers",
        entry_gates.check_entry_gates,
    ),
    Rule("reactions calling gates that refuse the system principal", principal.check_reactor_gates),
    Rule("gates anonymous callers can never pass", anonymous.check_anonymous_gates),
    Rule("read rules that hide every row from the system", read_rules.check_read_rules),
    Rule("tenanted contexts: the tenant column, reactions", tenants.check_tenants),
    Rule("generated names: routes and columns", _generated_names),
    Rule("`renamed from`: old names free in their scope", renames.check_renames),
    Rule("public operations the context's own code calls", bypass.check_bypassing_routes),
    Rule("`readOnly` fields, and gated fields crudish routes take", read_only.check_read_only),
    Rule("gated calls a timeout makes unguarded", timeout_refusals.check_timeout_refusals),
)
