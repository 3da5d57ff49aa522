"""Diagrams of a model (`loom diagram`, docs/diagrams.md): each view builds a `graph.Graph` from
the IR alone, and each format renders one.

The views: `context` (the context map), `states` (aggregates' and process managers' state
machines), `deployables` (the services, their databases, brokers and channels). `svg` is no
renderer here: the command runs Graphviz's `dot` on the `dot` text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from loom.codegen.diagrams import dot, mermaid
from loom.codegen.diagrams.context_view import context_graph
from loom.codegen.diagrams.deployables_view import deployables_graph
from loom.codegen.diagrams.graph import Graph
from loom.codegen.diagrams.states_view import states_graph
from loom.model import ir

VIEWS: Final[dict[str, Callable[[ir.Model], Graph]]] = {
    "context": context_graph,
    "states": states_graph,
    "deployables": deployables_graph,
}
__all__ = ["RENDERERS", "VIEWS", "context_graph", "deployables_graph", "diagram", "states_graph"]

RENDERERS: Final[dict[str, Callable[[Graph], str]]] = {
    "mermaid": mermaid.render,
    "dot": dot.render,
}


def diagram(model: ir.Model, view: str, fmt: str) -> str:
    """The text of `view` of `model` in `fmt` (a key of `VIEWS` and of `RENDERERS`)."""
    return RENDERERS[fmt](VIEWS[view](model))
