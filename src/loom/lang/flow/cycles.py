"""Cycles in a directed graph: its strongly connected components (Tarjan's, without recursion, so a
model of thousands of events does not reach Python's stack limit), and one cycle through a given
edge of a component, to print."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


def components(nodes: Sequence[N], succ: Mapping[N, Sequence[N]]) -> list[list[N]]:
    """The strongly connected components of more than one node, each in the order of `nodes`, the
    components in the order of their first node."""
    order = {n: i for i, n in enumerate(nodes)}
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    found: list[list[N]] = []
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[N, int]] = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nexts = succ.get(node, ())
            recursed = False
            while i < len(nexts):
                nxt = nexts[i]
                i += 1
                if nxt not in index:
                    work.append((node, i))
                    work.append((nxt, 0))
                    recursed = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if recursed:
                continue
            if work and low[node] < low[work[-1][0]]:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp: list[N] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp, key=lambda n: order.get(n, len(order))))
    found.sort(key=lambda comp: order.get(comp[0], len(order)))
    return found


def cycle_through(start: N, end: N, within: set[N], succ: Mapping[N, Sequence[N]]) -> list[N]:
    """The shortest path from `end` back to `start` inside `within`, after the edge start -> end:
    the cycle [start, end, …, start]."""
    came: dict[N, N] = {end: end}
    queue = deque([end])
    while queue:
        node = queue.popleft()
        if node == start:
            break
        for nxt in succ.get(node, ()):
            if nxt in within and nxt not in came:
                came[nxt] = node
                queue.append(nxt)
    back = [start]  # start, then each node's predecessor, back to `end`
    while back[-1] != end:
        back.append(came[back[-1]])
    return [start, *reversed(back)]
