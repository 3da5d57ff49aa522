"""Which parts of a model the service of a set of its contexts holds (one deployable).

The held contexts are generated whole. Another context reaches into them only through its public
surface: the ids of its aggregates, its events and the handlers it calls through a `resource {
kind: api }`. Each such context gets a contract package, its `ids.py`, a `domain.py` with its
events and the enums, value objects and payloads they and the called handlers' arguments and
answers need (with their wire models, `schemas.py`, when there are any), and nothing else: no aggregate, table, route or reaction of it runs in this service. The channels the service
keeps are those it publishes to (one carrying an event of a held context) and those it consumes
from (one carrying an event a held reaction consumes).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

from loom.model import ir
from loom.model.deployables import Consumer, channels_used, consumers

_Ref = ir.IdType | ir.EventType | ir.EnumType | ir.ValueType | ir.PayloadType | ir.AggregateType


@dataclass(frozen=True)
class Subset:
    held: tuple[str, ...]  # in the model's order
    contracts: tuple[ir.Context, ...]  # the other contexts it needs, cut down to their contract
    channels: tuple[ir.Channel, ...]


def select(model: ir.Model, contexts: Collection[str]) -> Subset:
    """The service of `contexts` (names of contexts of `model`; ValueError for an unknown one)."""
    known = {c.name: c for c in model.contexts}
    unknown = sorted(set(contexts) - set(known))
    if unknown:
        raise ValueError(
            f"no context {', '.join(unknown)} in the model (its contexts: {', '.join(known)})"
        )
    held = [c for c in model.contexts if c.name in contexts]
    channels = channels_used(model, contexts)
    # the records (enums, value objects, payloads) of each other context its contract needs
    needed: dict[str, set[str]] = {}
    pending: list[object] = [*held, *channels]
    while pending:
        for ref in _refs(pending.pop()):
            if ref.context in contexts:
                continue
            other = known[ref.context]
            if ref.context not in needed:
                needed[ref.context] = set()
                pending += other.events  # a contract holds every event of its context
            name = _record_name(ref)
            if name is not None and name not in needed[ref.context]:
                needed[ref.context].add(name)
                pending += [d for d in (*other.enums, *other.records) if d.name == name]
    contracts = tuple(_contract(c, needed[c.name]) for c in model.contexts if c.name in needed)
    return Subset(tuple(c.name for c in held), contracts, channels)


def broker_consumers(
    model: ir.Model, channels: Sequence[ir.Channel], held: Collection[str] | None
) -> list[list[Consumer]]:
    """Per channel, the durable consumers that read it from a broker: the reactions to its events
    that run in another deployable than the event's producer, in model order. The deployables are
    the model's declared ones; for a service of other contexts than a declared deployable's
    (`held`), that service is one and the rest of the model another; the whole model is one
    deployable, and nothing crosses. All channels at once: the reactions are walked once, not once
    per channel."""
    declared = {frozenset(d.contexts) for d in model.deployables}
    if held is not None and frozenset(held) not in declared:
        # some contexts run apart from how the model groups them (`loom run --contexts`): this
        # service is one deployable, the rest of the model another
        home = {c.name: str(c.name in held) for c in model.contexts}
    elif model.deployables:
        home = {c: d.name for d in model.deployables for c in d.contexts}
    else:
        return [[] for _ in channels]
    carriers: dict[ir.EventType, list[int]] = {}
    for i, ch in enumerate(channels):
        for e in dict.fromkeys(ch.events):
            carriers.setdefault(e, []).append(i)
    out: list[list[Consumer]] = [[] for _ in channels]
    for c in consumers(model):
        if home[c.context] != home[c.reaction.event.context]:
            for i in carriers.get(c.reaction.event, ()):
                out[i].append(c)
    return out


def _record_name(ref: _Ref) -> str | None:
    if isinstance(ref, ir.EnumType | ir.ValueType | ir.PayloadType):
        return ref.name
    return None


def _contract(context: ir.Context, records: set[str]) -> ir.Context:
    """`context` with only its events and the enums and records they need."""
    return dataclasses.replace(
        context,
        enums=tuple(e for e in context.enums if e.name in records),
        aggregates=(),
        repositories=(),
        workflows=(),
        criteria=(),
        retrievals=(),
        handlers=(),
        services=(),
        values=tuple(v for v in context.values if v.name in records),
        payloads=tuple(p for p in context.payloads if p.name in records),
        projections=(),
        channels=(),
        timers=(),
    )


def _refs(node: object) -> Iterator[_Ref]:
    """Every type naming a declaration of a context, anywhere below `node` (an IR node)."""
    if isinstance(node, _Ref):
        yield node
    if isinstance(node, tuple):
        for item in node:
            yield from _refs(item)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for name in _field_names(type(node)):
            yield from _refs(getattr(node, name))


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))
