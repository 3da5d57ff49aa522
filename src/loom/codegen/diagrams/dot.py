"""A `Graph` in Graphviz's DOT language, for `dot -Tsvg` (and any other Graphviz output).

Every id is a double-quoted DOT string, so a node's id is the model's own name unchanged
(`"Orders.Fulfilment"`); only a `"` or `\\` would be escaped, and no model name holds one. A group
is a `cluster_`-named subgraph, as Graphviz draws only those as boxes. In a flowchart, a labelled
arrow goes through a node holding its label, `"edge:<n>"` (the arrow's number): no model name
holds a `:`.
"""

from __future__ import annotations

from loom.codegen.diagrams.graph import Graph, Node

_SHAPES = {
    "box": "shape=box",
    "round": "shape=box, style=rounded",
    "database": "shape=cylinder",
    "queue": "shape=box, style=rounded, peripheries=2",
    "start": "shape=point, width=0.15",
    "end": "shape=doublecircle, width=0.15, fixedsize=true",
}
# the node an arrow's label is drawn in (`_through_label`)
_LABEL = 'shape=box, style=rounded, color=gray70, fontsize=9, margin="0.06,0.02", height=0.2'
_INDENT = "  "


def quote(text: str) -> str:
    """A DOT double-quoted string of `text` (a newline as DOT's centred line break)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render(graph: Graph) -> str:
    states = graph.kind == "states"
    out = [
        "digraph loom {",
        f"{_INDENT}rankdir={'TB' if states else 'LR'};",
        f'{_INDENT}fontname="Helvetica";',
        f'{_INDENT}node [fontname="Helvetica", fontsize=11];',
        f'{_INDENT}edge [fontname="Helvetica", fontsize=9];',
    ]
    members = graph.members()
    out += [_INDENT + _node(n) for n in members[None]]
    for group in graph.groups:
        out.append(f"{_INDENT}subgraph {quote('cluster_' + group.id)} {{")
        out.append(f"{_INDENT * 2}label={quote(group.label)};")
        out += [_INDENT * 2 + _node(n) for n in members[group.id]]
        out.append(f"{_INDENT}}}")
    databases = {n.id for n in graph.nodes if n.shape == "database"}
    for number, edge in enumerate(graph.edges, 1):
        style = ["style=dashed"] if edge.dashed else []
        if edge.target in databases:  # drawn beside what it belongs to, not a rank further
            out.append(f"{_INDENT}{{ rank=same; {quote(edge.source)}; {quote(edge.target)}; }}")
        if edge.label and not states:
            out += _through_label(edge.source, edge.target, edge.label, f"edge:{number}", style)
            continue
        attributes = [f"label={quote(edge.label)}"] if edge.label else []
        out.append(_edge(edge.source, edge.target, [*attributes, *style]))
    out.append("}")
    return "\n".join(out) + "\n"


def _through_label(source: str, target: str, label: str, via: str, style: list[str]) -> list[str]:
    """A labelled arrow of a flowchart, drawn through a node holding its label: Graphviz piles
    up the labels of arrows between two nodes of one rank (two contexts calling each other)."""
    return [
        f"{_INDENT}{quote(via)} [label={quote(label)}, {_LABEL}];",
        _edge(source, via, ["arrowhead=none", *style]),
        _edge(via, target, style),
    ]


def _edge(source: str, target: str, attributes: list[str]) -> str:
    tail = f" [{', '.join(attributes)}]" if attributes else ""
    return f"{_INDENT}{quote(source)} -> {quote(target)}{tail};"


def _node(node: Node) -> str:
    label = "" if node.shape in ("start", "end") else node.label
    return f"{quote(node.id)} [label={quote(label)}, {_SHAPES[node.shape]}];"
