"""`loom.context-cycle`: contexts that depend on one another in a circle.

- Synchronous API calls (`resource { kind: api }`): context A calls B, which calls … A. Each call
  waits for the next, so the contexts can neither be deployed nor reasoned about apart: an error.
- Events: an event of one context sets off a reaction in another, whose event sets off … the
  first event again. A flow that runs in circles between contexts is a process nobody can describe
  from one place: a warning, which prints the cycle. A reply back to the context that started a
  flow is no cycle: only the same event coming round again is.
"""

from __future__ import annotations

from itertools import pairwise

from loom.lang.diagnostics import Sink, Span
from loom.lang.flow.cycles import components, cycle_through
from loom.lang.flow.spans import Spans
from loom.model import ir
from loom.model.flow import EventKey, Flow


def check_api_cycles(flow: Flow, spans: Spans, sink: Sink) -> None:
    succ: dict[str, list[str]] = {}
    first_call: dict[tuple[str, str], Span] = {}
    for call in flow.api_calls:
        if call.caller == call.callee:
            continue
        edge = (call.caller, call.callee)
        if edge not in first_call:
            first_call[edge] = spans.word(call.origin, call.resource)
            succ.setdefault(call.caller, []).append(call.callee)
    contexts = [c.name for c in flow.model.contexts]
    for comp in components(contexts, succ):
        start = comp[0]
        end = next(n for n in succ[start] if n in comp)
        cycle = cycle_through(start, end, set(comp), succ)
        hops = list(pairwise(cycle))
        sink.report(
            "loom.context-cycle",
            "contexts call one another's API in a cycle: "
            + " → ".join(f"`{c}`" for c in cycle)
            + "; each waits on the next, so none can run, fail or be deployed on its own",
            first_call[hops[0]],
            f"`{hops[0][0]}` calls `{hops[0][1]}`",
            secondary=[(first_call[h], f"`{h[0]}` calls `{h[1]}`") for h in hops[1:]],
            help="make one direction an event instead of a call (the callee reacts to what the "
            "caller emits), or merge the contexts if they really cannot work apart",
        )


def check_event_cycles(
    flow: Flow, events: dict[EventKey, ir.Event], spans: Spans, sink: Sink
) -> None:
    succ: dict[EventKey, list[EventKey]] = {}
    via: dict[tuple[EventKey, EventKey], tuple[str, str, ir.Reaction]] = {}
    for key, consumers in flow.consumers.items():
        for c in consumers:
            if c.kind == "projection":
                continue
            for nxt in sorted(flow.sets_off(c.body)):
                if (key, nxt) not in via:
                    via[(key, nxt)] = (c.context, c.owner, c.reaction)
                    succ.setdefault(key, []).append(nxt)
    for comp in components(list(events), succ):
        members = set(comp)
        crossing = next(
            (
                (a, b)
                for a in comp
                for b in succ.get(a, ())
                if b in members and via[(a, b)][0] != a[0]
            ),
            None,
        )
        if crossing is None:
            continue  # a cycle inside one context (`loom.reaction-loop` names the direct one)
        cycle = cycle_through(crossing[0], crossing[1], members, succ)
        hops = list(pairwise(cycle))
        steps = [f"`{a[0]}.{a[1]}` → `{via[(a, b)][0]}.{via[(a, b)][1]}`" for a, b in hops]
        secondary: list[tuple[Span, str]] = []
        for a, b in hops:
            ctx, owner, reaction = via[(a, b)]
            secondary.append(
                (spans.word(reaction.origin, a[1]), f"`{ctx}.{owner}` reacts, emitting `{b[1]}`")
            )
        head = events[cycle[0]]
        sink.report(
            "loom.context-cycle",
            "events go round in a cycle between contexts: "
            + " → ".join(steps)
            + f" → `{cycle[0][0]}.{cycle[0][1]}`",
            spans.word(head.origin, head.name),
            "comes round again",
            secondary=secondary,
            help="break the cycle: let one step end the flow (a state gate that stops a second "
            "round, or a reply event nobody answers with the first one again), or give the flow "
            "one owner, a process manager in one context",
            warning=True,
        )
