"""The console's drawings as SVG, laid out here with no layout engine (the machine serving the
console may have no Graphviz, and the console imports no compiler): what every drawing shares
(the frame and its arrow head, a labelled box), and the layout of a diagram of `console.json`
(`lanes`): its groups as horizontal lanes, each node in the column of its rank (the longest chain
of arrows leading to it, an arrow closing a cycle left out), so what sets a node off is to its
left. Every text is escaped: the SVG is safe to insert.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape


def frame(
    css: str, label: str, width: float, height: float, body: Iterable[str], role: str = "img"
) -> str:
    """An SVG drawing of class `css` with an arrow head (`marker-end="url(#<css>-arrow)"`),
    `label` its accessible name (a `group` holds links: an `img` has no interactive part)."""
    return (
        f'<svg class="{css}" role="{role}" aria-label="{escape(label)}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        'preserveAspectRatio="xMinYMid meet">'
        f'<defs><marker id="{css}-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>'
        "</defs>" + "".join(body) + "</svg>"
    )


def box(
    cx: float,
    cy: float,
    size: tuple[float, float],
    label: str,
    title: str,
    attrs: str,
    baseline: float = 5,
) -> str:
    """A rounded box centred on (cx, cy) with `label` in it (its baseline `baseline` below the
    centre) and `title` its tooltip; `attrs` (its class, ...) are the group's."""
    w, h = size
    return (
        f'<g {attrs}><rect x="{cx - w / 2:.0f}" y="{cy - h / 2:.0f}" width="{w:.0f}" '
        f'height="{h:.0f}" rx="10"/><text x="{cx:.0f}" y="{cy + baseline:.0f}" text-anchor="middle">'
        f"{escape(label)}</text><title>{escape(title)}</title></g>"
    )


# a diagram's node box (its least width), the space between two columns and two rows, a lane's
# title and margin; a label's width, about, per character (13 px system-ui) and its box's margin
NODE_W, NODE_H, COL_GAP, ROW_GAP, LANE_TITLE, PAD = 150, 52, 60, 16, 26, 12
CHAR_W, LABEL_PAD = 7.6, 24


@dataclass(frozen=True)
class Placed:
    """Where a diagram's node is drawn: its box's centre and width (its column's: as wide as
    the longest label in it, so no label is cut)."""

    x: float
    y: float
    w: float


@dataclass(frozen=True)
class Lane:
    label: str
    top: float
    height: float


@dataclass(frozen=True)
class Layout:
    nodes: dict[str, Placed]
    lanes: list[Lane]
    width: float
    height: float


def ranks(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Each node's column: the longest chain of arrows leading to it, in a drawing order that
    leaves out the arrows closing a cycle (found depth first from the nodes in `nodes` order)."""
    after: dict[str, list[str]] = {n: [] for n in nodes}
    for source, target in edges:
        if source in after and target in after and source != target:
            after[source].append(target)
    order: list[str] = []  # reverse post-order: every kept arrow goes forward in it
    seen: set[str] = set()
    for root in nodes:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(after[root]))]
        while stack:
            node, nexts = stack[-1]
            nxt = next((n for n in nexts if n not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(after[nxt])))
    order.reverse()
    position = {n: i for i, n in enumerate(order)}
    rank = dict.fromkeys(nodes, 0)
    for node in order:
        for nxt in after[node]:
            if position[nxt] > position[node]:
                rank[nxt] = max(rank[nxt], rank[node] + 1)
    return rank


def lanes(
    nodes: Sequence[Mapping[str, str | None]],
    groups: Sequence[Mapping[str, str]],
    edges: Iterable[tuple[str, str]],
) -> Layout:
    """Each group a lane (the nodes of none in a last, untitled one), each node in its rank's
    column, the nodes of one lane and rank one under the other."""
    rank = ranks([str(n["id"]) for n in nodes], edges)
    columns = max(rank.values(), default=0) + 1
    widths = [float(NODE_W)] * columns
    for node in nodes:
        label = str(node.get("label") or node["id"])
        column = rank[str(node["id"])]
        widths[column] = max(widths[column], len(label) * CHAR_W + LABEL_PAD)
    lefts = [PAD + sum(widths[:i]) + i * COL_GAP for i in range(columns)]
    order = [g["id"] for g in groups] + [None]
    titles = {g["id"]: g["label"] for g in groups}
    stacked: dict[tuple[str | None, int], int] = {}
    row: dict[str, int] = {}
    for node in nodes:
        id = str(node["id"])
        cell = (node.get("group"), rank[id])
        row[id] = stacked.get(cell, 0)
        stacked[cell] = row[id] + 1
    placed: dict[str, Placed] = {}
    drawn: list[Lane] = []
    top = float(PAD)
    for group in order:
        members = [n for n in nodes if n.get("group") == group]
        if not members:
            continue
        title = LANE_TITLE if group is not None else 0
        rows = max(stacked[(group, rank[str(n["id"])])] for n in members)
        height = title + rows * (NODE_H + ROW_GAP) + ROW_GAP
        for n in members:
            id = str(n["id"])
            w = widths[rank[id]]
            y = top + title + ROW_GAP + row[id] * (NODE_H + ROW_GAP) + NODE_H / 2
            placed[id] = Placed(lefts[rank[id]] + w / 2, y, w)
        drawn.append(Lane(titles.get(group, "") if group is not None else "", top, height))
        top += height + PAD
    return Layout(placed, drawn, lefts[-1] + widths[-1] + PAD, top)


def arrow(a: Placed, b: Placed, css: str, dashed: bool) -> str:
    """An arrow from box `a` to box `b`: right side to left side when `b` is in a later column,
    else a curve out of `a`'s bottom into `b`'s."""
    if b.x > a.x:
        x1, x2 = a.x + a.w / 2, b.x - b.w / 2
        mid = (x1 + x2) / 2
        d = f"M{x1:.0f},{a.y:.0f} C{mid:.0f},{a.y:.0f} {mid:.0f},{b.y:.0f} {x2:.0f},{b.y:.0f}"
    else:
        y1, y2 = a.y + NODE_H / 2, b.y + NODE_H / 2
        low = max(y1, y2) + 30
        d = f"M{a.x:.0f},{y1:.0f} C{a.x:.0f},{low:.0f} {b.x:.0f},{low:.0f} {b.x:.0f},{y2:.0f}"
    dash = ' stroke-dasharray="6 4"' if dashed else ""
    return f'<path class="edge" d="{d}"{dash} marker-end="url(#{css}-arrow)"/>'
