"""The Model screen's drawings: a diagram of `console.json`'s `model` (the context map, the event
flow) laid out in lanes (`layout.lanes`), each node a link to the screen that lists its rows.

Two SVGs of one size, one over the other: the drawing (lanes, arrows, boxes), drawn once, and the
counts, a layer the page's poll replaces every few seconds without touching the drawing (nor the
scroll position of a narrow screen). The counts are also the table under the drawing, which is
their text alternative: the layer is hidden from assistive technology.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import quote

from loom.runtime.http.console.layout import NODE_H, PAD, Layout, arrow, box, frame, lanes
from loom.runtime.http.model_admin import CountsOut


@dataclass(frozen=True)
class Row:
    """A node of the table under the drawing: its label, id, counts and screen."""

    label: str
    id: str
    counts: CountsOut
    href: str | None


def place(diagram: Mapping[str, Any]) -> Layout:
    edges = [(e["source"], e["target"]) for e in diagram["edges"]]
    return lanes(diagram["nodes"], diagram["groups"], edges)


def drawing(diagram: Mapping[str, Any], layout: Layout, prefix: str, title: str) -> str:
    """The diagram's lanes, arrows and boxes, each box a link to its node's screen."""
    parts: list[str] = []
    for lane in layout.lanes:
        parts.append(
            f'<rect class="lane" x="{PAD / 2:.0f}" y="{lane.top:.0f}" '
            f'width="{layout.width - PAD:.0f}" height="{lane.height:.0f}" rx="6"/>'
        )
        if lane.label:
            parts.append(
                f'<text class="lane-title" x="{PAD:.0f}" y="{lane.top + 18:.0f}">'
                f"{escape(lane.label)}</text>"
            )
    at = layout.nodes
    for e in diagram["edges"]:
        if e["source"] in at and e["target"] in at and e["source"] != e["target"]:
            path = arrow(at[e["source"]], at[e["target"]], "model", e["dashed"])
            if e["label"]:
                path = path.replace("/>", f"><title>{escape(e['label'])}</title></path>")
            parts.append(path)
    for node in diagram["nodes"]:
        p = at[node["id"]]
        label = node["label"] or node["id"]
        elsewhere = "" if node.get("held", True) else " elsewhere"
        css = f'class="node {node["shape"]}{elsewhere}" data-node="{escape(node["id"])}"'
        where = "" if not elsewhere else ", counted by the deployable that holds it"
        drawn = box(p.x, p.y, (p.w, NODE_H), label, f"{label} ({node['id']}){where}", css, -3)
        href = screen_href(node, prefix)
        if href is not None:
            drawn = f'<a href="{escape(href)}" aria-label="{escape(label)}">{drawn}</a>'
        parts.append(drawn)
    return frame("model", title, layout.width, layout.height, parts, "group")


def counts_layer(
    diagram: Mapping[str, Any], layout: Layout, counts: Mapping[str, CountsOut], swap: bool
) -> str:
    """The counts of each node, in its box, below its label (an SVG over the drawing's); `swap`:
    marked to replace the page's (htmx's out-of-band swap, by its id)."""
    parts: list[str] = []
    for node in diagram["nodes"]:
        text = counts_text(counts.get(node["id"]))
        if text:
            p = layout.nodes[node["id"]]
            parts.append(
                f'<text class="counts" data-node="{escape(node["id"])}" x="{p.x:.0f}" '
                f'y="{p.y + 15:.0f}" text-anchor="middle">{escape(text)}</text>'
            )
    oob = ' hx-swap-oob="true"' if swap else ""
    return (
        f'<svg id="model-counts"{oob} class="model-counts" '
        'aria-hidden="true" '
        f'viewBox="0 0 {layout.width:.0f} {layout.height:.0f}" width="{layout.width:.0f}" '
        f'height="{layout.height:.0f}">' + "".join(parts) + "</svg>"
    )


def counts_text(counts: CountsOut | None) -> str:
    """`2 running · 1 pending · 3 dead`, the counts that are not 0 ("" when none is)."""
    if counts is None:
        return ""
    shown = [("running", counts.running), ("pending", counts.pending), ("dead", counts.dead)]
    return " · ".join(f"{n} {what}" for what, n in shown if n)


def rows(diagram: Mapping[str, Any], counts: Mapping[str, CountsOut], prefix: str) -> list[Row]:
    """The nodes with a screen (their rows are listed on it), in drawing order, for the table
    under the drawing."""
    return [
        Row(
            node["label"] or node["id"],
            node["id"],
            counts.get(node["id"], CountsOut()),
            screen_href(node, prefix),
        )
        for node in diagram["nodes"]
        if node.get("screen")
    ]


def screen_href(node: Mapping[str, Any], prefix: str) -> str | None:
    screen = node.get("screen")
    return f"{prefix}/{quote(screen)}" if screen else None
