"""The console's own layout of a diagram of `console.json` (console/layout.py): columns by the
longest chain of arrows (a cycle broken, never looping), lanes by group, boxes as wide as their
labels; a node of another deployable's context dashed, with no link; and a broken `console.json` refused at start with a sentence (model_admin.read_diagrams)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.runtime.http.console.layout import LABEL_PAD, NODE_W, lanes, ranks
from loom.runtime.http.console.model_drawing import counts_layer, drawing, place
from loom.runtime.http.model_admin import CountsOut, read_diagrams
from loom.runtime.values.errors import StartupRefused


def test_ranks_follow_the_longest_chain_and_break_a_cycle() -> None:
    edges = [("a", "b"), ("b", "c"), ("a", "c"), ("c", "a"), ("d", "d")]
    assert ranks(["a", "b", "c", "d"], edges) == {"a": 0, "b": 1, "c": 2, "d": 0}
    assert ranks([], []) == {}


def test_lanes_hold_their_groups_nodes_in_their_columns() -> None:
    long = "PaymentDeadline.on(Payment.PaymentFailed)"
    nodes: list[dict[str, str | None]] = [
        {"id": "S.x", "label": "x", "group": "S"},
        {"id": "L.y", "label": long, "group": "L"},
        {"id": "L.z", "label": "z", "group": "L"},
        {"id": "free", "label": "free", "group": None},
    ]
    groups = [{"id": "S", "label": "context S"}, {"id": "L", "label": "context L"}]
    layout = lanes(nodes, groups, [("S.x", "L.y"), ("S.x", "L.z")])
    at = layout.nodes
    assert [lane.label for lane in layout.lanes] == ["context S", "context L", ""]
    assert at["L.y"].x == at["L.z"].x > at["S.x"].x  # one column, one under the other
    assert at["L.z"].y > at["L.y"].y > at["S.x"].y
    assert at["S.x"].w == NODE_W and at["L.y"].w == at["L.z"].w > len(long) * 7 + LABEL_PAD
    assert layout.width >= at["L.y"].x + at["L.y"].w / 2
    assert layout.height > at["free"].y


@pytest.mark.parametrize("content", ["{not json", '{"model": []}', "[]"])
def test_a_broken_console_json_is_refused_with_a_sentence(tmp_path: Path, content: str) -> None:
    path = tmp_path / "console.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StartupRefused, match="the service does not start"):
        read_diagrams(path)
    assert read_diagrams(None) == {}


def test_a_node_of_another_deployable_is_drawn_dashed_without_a_link() -> None:
    diagram = {
        "groups": [],
        "nodes": [
            {
                "id": "Orders",
                "label": "Orders",
                "shape": "box",
                "group": None,
                "counts": ["Orders.Deadline"],
                "screen": "processes/Orders.Deadline",
                "held": True,
            },
            {
                "id": "Payment",
                "label": "Payment",
                "shape": "box",
                "group": None,
                "counts": [],
                "screen": None,
                "held": False,
            },
        ],
        "edges": [
            {
                "source": "Orders",
                "target": "Payment",
                "label": "Orders.Out: Placed",
                "dashed": False,
            }
        ],
    }
    svg = drawing(diagram, place(diagram), "/_loom", "Context map")
    assert '<a href="/_loom/processes/Orders.Deadline" aria-label="Orders">' in svg
    assert (
        'class="node box elsewhere" data-node="Payment"' in svg
        and 'aria-label="Payment"' not in svg
    )
    assert "<title>Orders.Out: Placed</title>" in svg
    counts = {"Orders": CountsOut(running=2, dead=1)}
    layer = counts_layer(diagram, place(diagram), counts, swap=True)
    assert 'id="model-counts" hx-swap-oob="true"' in layer and ">2 running · 1 dead</text>" in layer
