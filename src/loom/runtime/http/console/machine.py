"""A process's state machine drawn as SVG on the instance page, its current state marked.

The machine is the `states` diagram's (`process_admin.MachineOut`: the generated `console.json`):
a start, the states (`running`, `completed`), an end for a `once` workflow. A process machine is
small and always of that shape, so it is laid out here, in a row, with no layout engine: a move to
the next state is a straight arrow, a move that stays is a loop above its state, a move back (a
starter after `complete`) an arc below. The labels (what moves it) are the table beside the
drawing, which reads at any width and to a screen reader; the drawing shows where the instance is.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom.runtime.http.console.layout import box, frame
from loom.runtime.http.process_admin import MachineOut

_W, _H, _GAP, _PAD = 120, 44, 70, 16  # a state's box, the space between two, the margin
_DOT = 9  # the start's and the end's radius
_MID = 70  # the row's middle: room above for loops, below for arcs back


@dataclass(frozen=True)
class Move:
    source: str
    target: str
    label: str


@dataclass(frozen=True)
class Drawing:
    svg: str  # safe to insert: every text in it is escaped
    moves: list[Move]  # labels by state names, for the table beside the drawing


def draw(machine: MachineOut) -> Drawing:
    names = {n["id"]: n["label"] or n["shape"] for n in machine.nodes}
    order = [n["id"] for n in machine.nodes if n["shape"] == "start"]
    order += [n["id"] for n in machine.nodes if n["shape"] == "round"]
    order += [n["id"] for n in machine.nodes if n["shape"] == "end"]
    x: dict[str, float] = {}
    at = float(_PAD)
    for node in order:
        dot = names[node] in ("start", "end")
        x[node] = at + (_DOT if dot else _W / 2)
        at += (2 * _DOT if dot else _W) + _GAP
    width = at - _GAP + _PAD
    parts: list[str] = []
    drawn: set[tuple[str, str]] = set()
    for edge in machine.edges:
        pair = (edge["source"], edge["target"])
        if pair in drawn or pair[0] not in x or pair[1] not in x:
            continue
        drawn.add(pair)
        parts.append(_arrow(x, names, *pair))
    for node in order:
        parts.append(_node(x[node], names[node], node == machine.current))
    current = names.get(machine.current, machine.current)
    states = ", ".join(names[n] for n in order if names[n] not in ("start", "end"))
    title = f"State machine: {states}. This instance is {current}."
    svg = frame("machine", title, width, 2 * _MID, parts)
    moves = [
        Move(names[e["source"]], names[e["target"]], e["label"])
        for e in machine.edges
        if e["source"] in names and e["target"] in names
    ]
    return Drawing(svg, moves)


def _node(cx: float, label: str, current: bool) -> str:
    if label == "start":
        return f'<circle class="pseudo" cx="{cx:.0f}" cy="{_MID}" r="{_DOT}"/>'
    if label == "end":
        return (
            f'<circle class="pseudo-ring" cx="{cx:.0f}" cy="{_MID}" r="{_DOT}"/>'
            f'<circle class="pseudo" cx="{cx:.0f}" cy="{_MID}" r="{_DOT - 4}"/>'
        )
    mark = 'class="state-box current" aria-current="true"' if current else 'class="state-box"'
    text = label + (" (this instance)" if current else "")
    return box(cx, _MID, (_W, _H), label, text, mark)


def _arrow(x: dict[str, float], names: dict[str, str], source: str, target: str) -> str:
    half = {n: (_DOT if names[n] in ("start", "end") else _W / 2) for n in (source, target)}
    if source == target:  # stays: a loop above the state
        cx, top = x[source], _MID - _H / 2
        d = f"M{cx - 20:.0f},{top:.0f} C{cx - 30:.0f},{top - 40:.0f} {cx + 30:.0f},{top - 40:.0f} {cx + 20:.0f},{top:.0f}"
    elif x[target] > x[source]:  # forward: straight, edge to edge
        d = f"M{x[source] + half[source]:.0f},{_MID} L{x[target] - half[target]:.0f},{_MID}"
    else:  # back: an arc below
        bottom = _MID + _H / 2
        a, b = x[source], x[target]
        d = f"M{a:.0f},{bottom:.0f} C{a:.0f},{bottom + 45:.0f} {b:.0f},{bottom + 45:.0f} {b:.0f},{bottom:.0f}"
    return f'<path class="move" d="{d}" marker-end="url(#machine-arrow)"/>'
