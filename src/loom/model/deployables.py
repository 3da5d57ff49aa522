"""Walkers over a model's topology for the back ends: which deployable runs a context, which
reactions consume a channel's events (under their stable consumer names), and which events cross
from one deployable to another.

A consumer name (docs/events.md "Names") is `<Context>.<Workflow or projection>.<create|on>(<Event>)`,
the event qualified when it belongs to another context: it names the handler in the logs, keys the
inbox, and names a broker's durable consumer. `consumer_name` is its one definition.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from loom.model import ir
from loom.model.ir.topology import IMPLICIT, Deployable


def event_label(event: ir.EventType, here: str) -> str:
    """How a model names an event from context `here`: bare in its own context, else qualified."""
    return event.name if event.context == here else f"{event.context}.{event.name}"


def consumer_name(context: str, owner: str, reaction: ir.Reaction) -> str:
    """The stable consumer name of a reaction of `owner` (a workflow or projection) in `context`:
    `Support.AskForRating.create(TicketResolved)`, `Orders.settle.on(Payment.PaymentSucceeded)`."""
    return f"{context}.{owner}.{reaction.kind}({event_label(reaction.event, context)})"


@dataclass(frozen=True, slots=True)
class Consumer:
    """A reaction as a consumer of events: its name, its context, and the workflow or projection
    it belongs to."""

    name: str
    context: str
    owner: str
    reaction: ir.Reaction


@dataclass(frozen=True, slots=True)
class Crossing:
    """An event consumed in a deployable other than the one of the context that raises it: it
    must travel between two services, on `channel` (None: on no channel, which the compiler
    refuses)."""

    event: ir.EventType
    producer: str  # the producing deployable's name
    consumer: str  # the consuming deployable's name
    channel: ir.Channel | None


def deployables_of(model: ir.Model) -> tuple[Deployable, ...]:
    """The declared deployables, else the implicit one: named `topology.IMPLICIT` (""), holding
    every context in model order (the whole model in one process, as without deployables)."""
    if model.deployables:
        return model.deployables
    return (Deployable(IMPLICIT, tuple(c.name for c in model.contexts), None),)


def deployable_of(model: ir.Model, context: str) -> Deployable:
    """The deployable that runs `context` (a checked model puts each context in exactly one)."""
    for d in deployables_of(model):
        if context in d.contexts:
            return d
    raise LookupError(f"context `{context}` is in no deployable of the model")


def consumers(model: ir.Model) -> Iterator[Consumer]:
    """Every reaction of the model, in model order: workflows' before projections', per context."""
    for ctx in model.contexts:
        owners: list[ir.Workflow | ir.Projection] = [*ctx.workflows, *ctx.projections]
        for owner in owners:
            for r in owner.reactions:
                yield Consumer(consumer_name(ctx.name, owner.name, r), ctx.name, owner.name, r)


def consumers_of(model: ir.Model, channel: ir.Channel) -> tuple[Consumer, ...]:
    """The reactions, in the whole model, that consume an event `channel` carries."""
    carried = set(channel.events)
    return tuple(c for c in consumers(model) if c.reaction.event in carried)


def channels_used(model: ir.Model, contexts: Collection[str]) -> tuple[ir.Channel, ...]:
    """The channels a service of `contexts` uses, in model order: the ones it publishes to (they
    carry an event of one of its contexts) and the ones it consumes from (one of its reactions
    consumes an event they carry)."""
    consumed = {c.reaction.event for c in consumers(model) if c.context in contexts}
    return tuple(
        ch
        for ctx in model.contexts
        for ch in ctx.channels
        if any(e.context in contexts or e in consumed for e in ch.events)
    )


def channel_of(model: ir.Model, event: ir.EventType) -> ir.Channel | None:
    """The channel carrying `event` (an event rides at most one), None when it is not durable."""
    for ctx in model.contexts:
        for ch in ctx.channels:
            if event in ch.events:
                return ch
    return None


def crossings(model: ir.Model) -> tuple[Crossing, ...]:
    """One crossing per event and consuming deployable other than its producer's, in the order
    of the first reaction that consumes it there. None without declared deployables."""
    out: dict[tuple[ir.EventType, str], Crossing] = {}
    carriers: dict[ir.EventType, ir.Channel] = {}  # `channel_of` of every event, found in one pass
    for ctx in model.contexts:
        for ch in ctx.channels:
            for e in ch.events:
                carriers.setdefault(e, ch)
    for c in consumers(model):
        event = c.reaction.event
        producer = deployable_of(model, event.context).name
        consumer = deployable_of(model, c.context).name
        if producer != consumer and (event, consumer) not in out:
            out[event, consumer] = Crossing(event, producer, consumer, carriers.get(event))
    return tuple(out.values())
