"""A `Graph` as Mermaid text, which GitHub, GitLab and Gitea render in a ```mermaid block: a
`flowchart`, or a `stateDiagram-v2` whose composite states are the graph's groups.

Mermaid ids take letters, digits and `_` only (a `.` would be read as part of an arrow), so an id
is written with each other character, and `_` itself, as `_<hex code point>_`:
`Orders.Fulfilment` -> `Orders_2e_Fulfilment`, `my_ctx` -> `my_5f_ctx`; and a word Mermaid
reads as a keyword where an id stands has its first letter written so too (`end` -> `_65_nd`).
No two ids map to one (docs/diagrams.md, "Node ids"). A group's id is `cluster_` and its escaped id, as Mermaid has one
namespace for nodes and subgraphs (a deployable and its only context are often named alike).
"""

from __future__ import annotations

from loom.codegen.diagrams.graph import Edge, Graph, Node

_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_SHAPES = {
    "box": ('["', '"]'),
    "round": ('("', '")'),
    "database": ('[("', '")]'),
    "queue": ('(["', '"])'),
    "start": ('(("', '"))'),
    "end": ('((("', '")))'),
}
_INDENT = "    "
# the words a flowchart or a state diagram does not take as an id (found with Mermaid's parser:
# tests/codegen/diagrams/test_mermaid.py)
KEYWORDS = frozenset(
    ("call", "class", "classDef", "click", "end", "flowchart", "graph", "href", "linkStyle")
    + ("note", "state", "style", "subgraph")
)


def mermaid_id(loom_id: str) -> str:
    """`loom_id` as a Mermaid id (the module's rule)."""
    escaped = "".join(c if c in _KEEP else f"_{ord(c):x}_" for c in loom_id)
    if loom_id in KEYWORDS:
        return f"_{ord(loom_id[0]):x}_{escaped[1:]}"
    return escaped


def _group_id(loom_id: str) -> str:
    return f"cluster_{mermaid_id(loom_id)}"


def _text(label: str) -> str:
    """A label inside Mermaid's double quotes: a quote as its entity, lines as `<br/>`."""
    return label.replace('"', "#quot;").replace("\n", "<br/>")


def render(graph: Graph) -> str:
    lines = _states(graph) if graph.kind == "states" else _flowchart(graph)
    return "\n".join(lines) + "\n"


def _flowchart(graph: Graph) -> list[str]:
    out = ["flowchart LR"]
    members = graph.members()
    out += [_INDENT + _node(n) for n in members[None]]
    for group in graph.groups:
        out.append(f'{_INDENT}subgraph {_group_id(group.id)} ["{_text(group.label)}"]')
        out += [_INDENT * 2 + _node(n) for n in members[group.id]]
        out.append(f"{_INDENT}end")
    for edge in graph.edges:
        arrow = "-.->" if edge.dashed else "-->"
        label = f'|"{_text(edge.label)}"|' if edge.label else ""
        out.append(f"{_INDENT}{mermaid_id(edge.source)} {arrow}{label} {mermaid_id(edge.target)}")
    return out


def _node(node: Node) -> str:
    left, right = _SHAPES[node.shape]
    return f"{mermaid_id(node.id)}{left}{_text(node.label)}{right}"


def _states(graph: Graph) -> list[str]:
    """Each group a composite state holding its states and its transitions; a start or end
    pseudo-node is Mermaid's `[*]` inside its composite state."""
    out = ["stateDiagram-v2"]
    pseudo = {n.id for n in graph.nodes if n.shape in ("start", "end")}
    group_of = {n.id: n.group for n in graph.nodes}
    transitions: dict[str | None, list[Edge]] = {}
    for edge in graph.edges:
        transitions.setdefault(group_of[edge.source], []).append(edge)
    members = graph.members()
    for group in graph.groups:
        out.append(f'{_INDENT}state "{_text(group.label)}" as {mermaid_id(group.id)} {{')
        for node in members[group.id]:
            if node.id not in pseudo:
                out.append(f'{_INDENT * 2}state "{_text(node.label)}" as {mermaid_id(node.id)}')
        out += [_INDENT * 2 + _transition(e, pseudo) for e in transitions.get(group.id, ())]
        out.append(f"{_INDENT}}}")
    return out


def _transition(edge: Edge, pseudo: set[str]) -> str:
    def end(node: str) -> str:
        return "[*]" if node in pseudo else mermaid_id(node)

    # a transition's text runs to the end of the line: it is written as it is, on one line
    label = f" : {edge.label.replace(chr(10), ' ')}" if edge.label else ""
    return f"{end(edge.source)} --> {end(edge.target)}{label}"
