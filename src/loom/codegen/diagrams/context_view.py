"""The `context` view: the context map. A box per context, in a group per deployable (none
when the model declares no deployable: it is one service); an arrow from the context that raises
an event to each other context reacting to it, labelled with the channel that carries it (and the
channel's source, its broker) and the events; a dashed arrow for events no channel carries (they
stay in one process), and for the calls of another context's handlers (`resource { kind: api }`).
"""

from __future__ import annotations

from loom.codegen.diagrams.graph import Edge, Graph, Group, Node
from loom.model import ir, walk
from loom.model.deployables import consumers, deployables_of
from loom.model.telemetry import qualified


def context_graph(model: ir.Model) -> Graph:
    graph = Graph("flowchart")
    grouped = bool(model.deployables)
    for d in deployables_of(model):
        if grouped:
            graph.groups.append(Group(d.name, f"deployable {d.name}"))
        graph.nodes += [Node(c, c, group=d.name if grouped else None) for c in d.contexts]
    graph.edges += _event_edges(model)
    graph.edges += _api_edges(model)
    return graph


def _event_edges(model: ir.Model) -> list[Edge]:
    """One arrow per producing context, consuming context and channel (None: no channel), in the
    order of the first reaction consuming across them; its label names the events, in the order
    the producing context declares them."""
    carriers = {e: ch for c in model.contexts for ch in c.channels for e in ch.events}
    events: dict[tuple[str, str, ir.Channel | None], list[str]] = {}
    for consumer in consumers(model):
        event = consumer.reaction.event
        if event.context == consumer.context:
            continue  # a context's reactions to its own events: inside its box
        names = events.setdefault((event.context, consumer.context, carriers.get(event)), [])
        if event.name not in names:
            names.append(event.name)
    declared = {(c.name, e.name): i for c in model.contexts for i, e in enumerate(c.events)}
    edges = []
    for (producer, consumer_context, channel), names in events.items():
        label = ", ".join(sorted(names, key=lambda n: declared[producer, n]))
        if channel is not None:
            source = f" ({channel.source})" if channel.source else ""
            label = f"{qualified(channel.context, channel.name)}{source}: {label}"
        edges.append(Edge(producer, consumer_context, label, dashed=channel is None))
    return edges


def _api_edges(model: ir.Model) -> list[Edge]:
    """One dashed arrow per resource a context calls through, labelled with the handlers called."""
    edges = []
    for ctx in model.contexts:
        called: dict[str, list[str]] = {r.name: [] for r in ctx.resources}
        for node in walk.nodes([ctx]):
            if isinstance(node, ir.ApiCall) and node.handler not in called[node.resource]:
                called[node.resource].append(node.handler)
        for resource in ctx.resources:
            handlers = ", ".join(called[resource.name])
            label = f"api {resource.name}" + (f": {handlers}" if handlers else "")
            edges.append(Edge(ctx.name, resource.target, label, dashed=True))
    return edges
