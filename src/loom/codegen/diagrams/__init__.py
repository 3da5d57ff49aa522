"""Diagrams of a model (`loom diagram`, docs/diagrams.md): each view builds a `graph.Graph` from
the IR alone, and each format renders one.

The views: `context` (the context map), `flow` (event storming: entry points, what they run, the
events, the reactions to them, onwards), `states` (aggregates' and process managers' state
machines), `deployables` (the services, their databases, brokers and channels). `svg` is no
renderer here: the command runs Graphviz's `dot` on the `dot` text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from loom.codegen.diagrams import dot, mermaid
from loom.codegen.diagrams.context_view import context_graph
from loom.codegen.diagrams.deployables_view import deployables_graph
from loom.codegen.diagrams.flow_view import flow_graph, narrowed
from loom.codegen.diagrams.graph import Graph
from loom.codegen.diagrams.states_view import states_graph
from loom.model import ir

VIEWS: Final[dict[str, Callable[[ir.Model], Graph]]] = {
    "context": context_graph,
    "flow": flow_graph,
    "states": states_graph,
    "deployables": deployables_graph,
}
__all__ = [
    "RENDERERS",
    "VIEWS",
    "context_graph",
    "deployables_graph",
    "diagram",
    "flow_from",
    "flow_graph",
    "narrowed",
    "states_graph",
]

RENDERERS: Final[dict[str, Callable[[Graph], str]]] = {
    "mermaid": mermaid.render,
    "dot": dot.render,
}


def diagram(model: ir.Model, view: str, fmt: str) -> str:
    """The text of `view` of `model` in `fmt` (a key of `VIEWS` and of `RENDERERS`)."""
    return RENDERERS[fmt](VIEWS[view](model))


def flow_from(model: ir.Model, start: str, fmt: str) -> str | None:
    """The text of what `start` sets off in the flow of `model` (`flow_view.narrowed`), in
    `fmt`; None when no node is `start`."""
    graph = narrowed(flow_graph(model), start)
    return None if graph is None else RENDERERS[fmt](graph)
