"""What the layout needs to know of the syntax tree: where each listed item starts (a line may
start there without being a continuation), which of those are declarations, members or
statements that get a line of their own, and which `-`, `?` and `:` tokens are operators (spaced)
rather than a sign, an optional mark or a label's colon (not spaced).

The tree is walked generically (every dataclass field, every list), so a new node kind needs no
change here unless it is a new kind of declaration, member or statement (`_OWN_LINE`).
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import get_args

from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lang.syntax.ast.contexts import Decl
from loom.lang.syntax.ast.members import Member

# each of these, but the first of its braces, starts a line: one declaration per line
_OWN_LINE: tuple[type, ...] = (
    ast.Context,
    ast.Deployable,
    ast.ChannelSource,
    *get_args(Decl),
    *get_args(Member),
    *get_args(ast.Stmt),
    ast.ChannelSetting,
    ast.RepoFind,
    ast.ServiceMethod,
    ast.Apply,
    ast.Create,
    ast.Handle,
    ast.On,
    ast.OnTimeout,
)
# the fields of these are a record's, written inline as often as not (`event E { a: int, b: int }`)
_RECORDS = (ast.Event, ast.ValueObject, ast.Payload)
# whose several lists are the members of one pair of braces
_ONE_BODY = (ast.File, ast.Workflow, ast.Projection, ast.Repository)


@dataclass(frozen=True)
class Anchors:
    starts: frozenset[int]  # offsets where a listed item starts
    own_line: frozenset[int]  # offsets that start a line of their own
    binary: frozenset[int]  # offsets of binary operators spelled `-`
    ternary: frozenset[int]  # offsets of a conditional's `?` and `:`


def anchors(tree: ast.File, offsets: list[int], kinds: list[str]) -> Anchors:
    """The anchors of `tree`, whose tokens start at `offsets` (sorted) with `kinds`."""
    starts: set[int] = set()
    own_line: set[int] = set()
    binary: set[int] = set()
    ternary: set[int] = set()

    def first(kind: str, after: int) -> int:
        i = bisect.bisect_left(offsets, after)
        while kinds[i] != kind:  # only closing parentheses lie between: the tree says so
            i += 1
        return offsets[i]

    for node in _nodes(tree):
        if isinstance(node, ast.Binary):
            binary.add(node.op_span.start)
        elif isinstance(node, ast.Ternary):
            ternary.add(first("?", node.condition.span.end))
            ternary.add(first(":", node.then.span.end))
        members: list[int] = []
        for f in dataclasses.fields(node):  # type: ignore[arg-type]
            value = getattr(node, f.name)
            if not isinstance(value, list):
                continue
            items = [s for item in value if (s := _start(item)) is not None]
            starts.update(items)
            if not isinstance(node, _RECORDS):
                mine = [_start(x) for x in value if isinstance(x, _OWN_LINE)]
                members += [s for s in mine if s is not None]
                if not isinstance(node, _ONE_BODY):
                    own_line.update(sorted(members)[1:])
                    members = []
        own_line.update(members if isinstance(node, ast.File) else sorted(members)[1:])
    return Anchors(frozenset(starts), frozenset(own_line), frozenset(binary), frozenset(ternary))


def _start(item: object) -> int | None:
    if isinstance(item, tuple):
        spans = [x for x in item if isinstance(x, Span)]
        return spans[0].start if spans else None
    span = getattr(item, "span", None)
    return span.start if isinstance(span, Span) else None


def _nodes(node: object) -> Iterator[object]:
    """Every node of the tree, `node` first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        for f in dataclasses.fields(current):  # type: ignore[arg-type]
            value = getattr(current, f.name)
            for child in value if isinstance(value, list | tuple) else (value,):
                if dataclasses.is_dataclass(child) and not isinstance(child, Span | type):
                    stack.append(child)
                elif isinstance(child, tuple):
                    stack += [x for x in child if dataclasses.is_dataclass(x)]
