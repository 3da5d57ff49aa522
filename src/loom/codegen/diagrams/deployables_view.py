"""The `deployables` view: the services a model runs as, and what they share.

A box per deployable (the one implicit service, `model`, when the model declares none) naming
its contexts, with its database; a channel per durable channel, inside a group per broker (its
`channelSource`, or `default` for the channels naming none: the broker a bare `--broker URL`
gives), an arrow from the deployable publishing to it and one to each deployable consuming from
it, labelled with the events; a dashed arrow for the calls of another deployable's handlers
(`resource { kind: api }`). A model with no declared deployable runs the channels that name no
source in its one process, on no broker: they are drawn outside any group.
"""

from __future__ import annotations

from loom.codegen.diagrams.graph import Edge, Graph, Group, Node
from loom.model import ir
from loom.model.deployables import consumers_of, deployable_of, deployables_of
from loom.model.messaging import DEFAULT_BROKER
from loom.model.telemetry import qualified

IMPLICIT_ID = "model"  # the id of the one implicit deployable, which has no name


def deployables_graph(model: ir.Model) -> Graph:
    graph = Graph("flowchart")
    names = {d.name: d.name or IMPLICIT_ID for d in deployables_of(model)}
    for d in deployables_of(model):
        graph.nodes.append(
            Node(names[d.name], f"{names[d.name]}\ncontexts: {', '.join(d.contexts)}")
        )
        graph.nodes.append(Node(f"{names[d.name]}:database", "database", "database"))
        graph.edges.append(Edge(names[d.name], f"{names[d.name]}:database"))
    kinds = {s.name: s.kind for s in model.channel_sources}
    for ctx in model.contexts:
        for ch in ctx.channels:
            broker = ch.source or (DEFAULT_BROKER if model.deployables else None)
            if broker is not None and all(g.id != broker for g in graph.groups):
                kind = f" ({kinds[broker]})" if broker in kinds else ""
                graph.groups.append(Group(broker, f"broker {broker}{kind}"))
            channel = qualified(ctx.name, ch.name)
            graph.nodes.append(Node(channel, f"{channel}\n{ch.retention}", "queue", broker))
            graph.edges += _channel_edges(model, ch, channel, names)
    graph.edges += _api_edges(model, names)
    return graph


def _channel_edges(
    model: ir.Model, channel: ir.Channel, node: str, names: dict[str, str]
) -> list[Edge]:
    """Publishing deployable -> channel, channel -> consuming deployable, each labelled with the
    events, in the channel's order of events and the model's of deployables."""
    published: dict[str, list[str]] = {}
    for e in channel.events:
        published.setdefault(names[deployable_of(model, e.context).name], []).append(
            qualified(e.context, e.name)
        )
    consumed: dict[str, list[str]] = {}
    for c in consumers_of(model, channel):
        events = consumed.setdefault(names[deployable_of(model, c.context).name], [])
        event = qualified(c.reaction.event.context, c.reaction.event.name)
        if event not in events:
            events.append(event)
    order = {qualified(e.context, e.name): i for i, e in enumerate(channel.events)}
    for events in consumed.values():
        events.sort(key=order.__getitem__)
    return [
        *(Edge(d, node, ", ".join(events)) for d, events in published.items()),
        *(Edge(node, d, ", ".join(events)) for d, events in consumed.items()),
    ]


def _api_edges(model: ir.Model, names: dict[str, str]) -> list[Edge]:
    """A dashed arrow per pair of deployables one calls the other's handlers between."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for ctx in model.contexts:
        for r in ctx.resources:
            caller = names[deployable_of(model, ctx.name).name]
            callee = names[deployable_of(model, r.target).name]
            if caller != callee:
                targets = pairs.setdefault((caller, callee), [])
                if r.target not in targets:
                    targets.append(r.target)
    return [Edge(a, b, f"api: {', '.join(t)}", dashed=True) for (a, b), t in pairs.items()]
