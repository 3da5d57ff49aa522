"""The drawing every view builds and both renderers (`mermaid`, `dot`) read: nodes in groups, and
labelled edges between them, in the order they are to be written (so the output is deterministic).

A node's id is the name the runtime gives the element in its telemetry (`loom.model.telemetry`:
a context's `loom.context`, a process's `loom.process`, a channel's `Context.Channel`, a
deployable's name); each renderer only escapes it as its format requires. Pseudo-nodes that are no
model element (a state machine's start, a deployable's database) hold a `:`, which no model name
does, so they never collide with one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

# how a node is drawn: an element (`box`), a state (`round`), a database, a channel (`queue`), and
# a state machine's start and end pseudo-states
Shape: TypeAlias = Literal["box", "round", "database", "queue", "start", "end"]


@dataclass(frozen=True, slots=True)
class Group:
    """A box around nodes (a deployable, a broker, a state machine)."""

    id: str
    label: str


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    label: str
    shape: Shape = "box"
    group: str | None = None  # the id of the group it is drawn in


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    label: str = ""
    dashed: bool = False  # a synchronous call, or an event that no channel carries


@dataclass(slots=True)
class Graph:
    """`kind`: a `flowchart` (boxes and arrows) or `states` (each group a state machine, whose
    edges stay inside it). Groups, nodes and edges in drawing order."""

    kind: Literal["flowchart", "states"]
    groups: list[Group] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def members(self) -> dict[str | None, list[Node]]:
        """The nodes drawn in each group (None: outside every group), in order, every group
        present."""
        out: dict[str | None, list[Node]] = {None: [], **{g.id: [] for g in self.groups}}
        for node in self.nodes:
            out[node.group].append(node)
        return out
