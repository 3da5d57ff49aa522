"""A `Graph` in Graphviz's DOT language, for `dot -Tsvg` (and any other Graphviz output).

Every id is a double-quoted DOT string, so a node's id is the model's own name unchanged
(`"Orders.Fulfilment"`); only a `"` or `\\` would be escaped, and no model name holds one. A group
is a `cluster_`-named subgraph, as Graphviz draws only those as boxes.
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
_INDENT = "  "


def quote(text: str) -> str:
    """A DOT double-quoted string of `text` (a newline as DOT's centred line break)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render(graph: Graph) -> str:
    direction = "TB" if graph.kind == "states" else "LR"
    out = [
        "digraph loom {",
        f"{_INDENT}rankdir={direction};",
        f'{_INDENT}node [fontname="Helvetica", fontsize=11];',
        f'{_INDENT}edge [fontname="Helvetica", fontsize=9];',
    ]
    out += [_INDENT + _node(n) for n in graph.members(None)]
    for group in graph.groups:
        out.append(f"{_INDENT}subgraph {quote('cluster_' + group.id)} {{")
        out.append(f"{_INDENT * 2}label={quote(group.label)};")
        out += [_INDENT * 2 + _node(n) for n in graph.members(group.id)]
        out.append(f"{_INDENT}}}")
    for edge in graph.edges:
        attributes = [f"label={quote(edge.label)}"] if edge.label else []
        if edge.dashed:
            attributes.append("style=dashed")
        tail = f" [{', '.join(attributes)}]" if attributes else ""
        out.append(f"{_INDENT}{quote(edge.source)} -> {quote(edge.target)}{tail};")
    out.append("}")
    return "\n".join(out) + "\n"


def _node(node: Node) -> str:
    label = "" if node.shape in ("start", "end") else node.label
    return f"{quote(node.id)} [label={quote(label)}, {_SHAPES[node.shape]}];"
