"""`loom.event-unconsumed`, `loom.event-never-emitted` and `loom.reaction-loop`: events that go
nowhere, reactions that nothing sets off, and a reaction that sets itself off again."""

from __future__ import annotations

from loom.lang.diagnostics import Sink
from loom.lang.flow.spans import Spans
from loom.model import ir
from loom.model.flow import Body, EventKey, Flow


def _label(key: EventKey) -> str:
    return f"{key[0]}.{key[1]}"


def event_declarations(model: ir.Model) -> dict[EventKey, ir.Event]:
    return {(c.name, e.name): e for c in model.contexts for e in c.events}


def check_events(flow: Flow, events: dict[EventKey, ir.Event], spans: Spans, sink: Sink) -> None:
    # A model in which no workflow reacts to an event publishes its events for the outside (the
    # user's Python subscribes to them): an event nothing takes is a broken link only in a chain
    # of reactions. The seeds' Sales context is such a model.
    reacting = any(c.kind != "projection" for cs in flow.consumers.values() for c in cs)
    for key, emits in flow.emits.items() if reacting else ():
        taken = key in flow.consumers or key in flow.folded or flow.channel_external(key)
        event = events.get(key)
        if taken or event is None:
            continue
        sink.report(
            "loom.event-unconsumed",
            f"event `{_label(key)}` is emitted but nothing consumes it: no workflow, process or "
            "projection reacts to it, and it rides no channel with a `source`",
            spans.word(event.origin, event.name),
            "consumed by nothing",
            secondary=[(spans.at(emit.origin), f"emitted by {body.label}") for body, emit in emits],
            help=f"react to it (`on(e: {_label(key)}) {{ … }}` in a workflow or projection), put "
            "it on a channel with `source:` for consumers outside the model, or stop emitting it "
            "and remove the event",
        )
    for key, consumers in flow.consumers.items():
        if key in flow.emits or flow.channel_external(key) or key not in events:
            continue
        event = events[key]
        for c in consumers:
            if c.kind == "projection":
                continue  # a read model: it sets nothing off, and waits for nothing to go on
            sink.report(
                "loom.event-never-emitted",
                f"`{c.owner}` of context `{c.context}` reacts to `{_label(key)}`, which nothing "
                "emits and no channel with a `source` brings in: this reaction never runs",
                spans.word(c.reaction.origin, key[1]),
                "never emitted",
                secondary=[
                    (spans.word(event.origin, event.name), "declared here, emitted nowhere")
                ],
                help=f"emit `{key[1]}` where it happens (`emit {key[1]} {{ … }}` in an operation "
                "or a workflow of its context), carry it on a channel with `source:` if another "
                "system publishes it, or remove the reaction",
            )


def check_reaction_loops(flow: Flow, spans: Spans, sink: Sink) -> None:
    for key, consumers in flow.consumers.items():
        for c in consumers:
            if c.kind == "projection":
                continue  # a projection emits nothing
            path = _ungated_path(flow, c.body, key, set())
            if path is None:
                continue
            emit, via = path
            sink.report(
                "loom.reaction-loop",
                f"`{c.owner}` reacts to `{_label(key)}` by emitting `{_label(key)}` again, with "
                "no gate that can stop it: each event sets off the next, without end",
                spans.word(c.reaction.origin, key[1]),
                "sets itself off again",
                secondary=[(spans.at(emit.origin), f"emitted again by {via.label}")],
                help="gate the step that emits it on the state (an operation's `when`, a "
                "`precondition`, an `if`), so that the second event finds nothing left to do, or "
                "emit another event",
            )


def _ungated_path(
    flow: Flow, body: Body, key: EventKey, seen: set[int]
) -> tuple[ir.Emit, Body] | None:
    """The `emit` of `key` that `body` runs on every path, with no gate before it (a
    `precondition`, an `if`, a loop, an operation's `when` or `requires`), and the body it is in."""
    if id(body) in seen:
        return None
    seen.add(id(body))
    for stmt in body.stmts:
        if isinstance(stmt, ir.Precondition | ir.Return | ir.NotFoundStmt):
            return None  # what follows may not run
        if isinstance(stmt, ir.Emit) and (stmt.context, stmt.event) == key:
            return stmt, body
        if isinstance(stmt, ir.If | ir.IfLet | ir.ForEach):
            continue  # only on some paths: a gate
        for callee_key in flow.callees(body, stmt):
            callee = flow.units.get(callee_key)
            if callee is None or callee.gated:
                continue
            found = _ungated_path(flow, callee, key, seen)
            if found is not None:
                return found
    return None
