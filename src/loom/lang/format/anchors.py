"""What the layout needs to know of the syntax tree: where each listed item starts (a line may
start there without being a continuation), which of those are declarations, members or
statements that get a line of their own, which `-`, `?` and `:` tokens are operators (spaced)
rather than a sign, an optional mark or a label's colon (not spaced), and which blocks of an
`if` … `else` are broken over lines.

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
# `filter X` in these is a member, the list holding X
_FILTERS = (ast.Projection, ast.Repository)


@dataclass(frozen=True)
class Anchors:
    starts: frozenset[int]  # offsets where a listed item starts
    own_line: frozenset[int]  # offsets that start a line of their own
    binary: frozenset[int]  # offsets of binary operators (a `-` not among them is a sign)
    ternary: frozenset[int]  # offsets of a conditional's `?` and `:`
    # offsets of the `{` of the blocks of an `if` … `else` written over several lines: all broken,
    # so no `} else if … { x } else { y }` runs on after a broken block
    broken: frozenset[int]
    # per `if` … `else if` … `else` chain, the offsets of the `{` of its blocks: one broken (its
    # contents need lines of their own) breaks them all, as if written over several lines
    if_chains: tuple[frozenset[int], ...] = ()


class _Tokens:
    def __init__(self, offsets: list[int], kinds: list[str]) -> None:
        self.offsets, self.kinds = offsets, kinds

    def first(self, kind: str, after: int) -> int:
        """The offset of the first token of `kind` at or after `after` (the tree says there is)."""
        i = bisect.bisect_left(self.offsets, after)
        while self.kinds[i] != kind:
            i += 1
        return self.offsets[i]

    def before(self, at: int) -> int:
        return self.offsets[bisect.bisect_left(self.offsets, at) - 1]


def anchors(tree: ast.File, offsets: list[int], kinds: list[str]) -> Anchors:
    """The anchors of `tree`, whose tokens start at `offsets` (sorted) with `kinds`."""
    tokens = _Tokens(offsets, kinds)
    starts: set[int] = set()
    own_line: set[int] = set()
    binary: set[int] = set()
    ternary: set[int] = set()
    chains: dict[int, set[int]] = {}  # by the start of its first `if`: the `{` of its blocks
    chain_of: dict[int, int] = {}  # the start of an `else if`'s `if`: its chain's
    written_broken: set[int] = set()  # the chains written over several lines
    for node in _nodes(tree):
        if isinstance(node, ast.Binary):
            binary.add(node.op_span.start)
        elif isinstance(node, ast.Ternary):
            # only closing parentheses lie between an operand and the operator that follows it
            ternary.add(tokens.first("?", node.condition.span.end))
            ternary.add(tokens.first(":", node.then.span.end))
        elif isinstance(node, ast.If | ast.IfLet):
            chain = chain_of.get(node.span.start, node.span.start)
            blocks, nested = _if_blocks(node, tokens)
            chains.setdefault(chain, set()).update(blocks)
            if nested is not None:
                chain_of[nested] = chain
            if node.span.line != node.span.end_line:
                written_broken.add(chain)
        members: list[int] = []
        for name in _names(type(node)):
            value = getattr(node, name)
            if not isinstance(value, list):
                continue
            starts.update(s for item in value if (s := _start(item)) is not None)
            if isinstance(node, _RECORDS):
                continue
            if isinstance(node, _FILTERS) and name == "filters":
                mine = [tokens.before(s) for x in value if (s := _start(x)) is not None]
            else:
                mine = [
                    s for x in value if isinstance(x, _OWN_LINE) and (s := _start(x)) is not None
                ]
            members += mine
            if not isinstance(node, _ONE_BODY):
                own_line.update(sorted(members)[1:])
                members = []
        own_line.update(members if isinstance(node, ast.File) else sorted(members)[1:])
    broken = {b for chain in written_broken for b in chains[chain]}
    return Anchors(
        frozenset(starts),
        frozenset(own_line),
        frozenset(binary),
        frozenset(ternary),
        frozenset(broken),
        tuple(map(frozenset, chains.values())),
    )


def _if_blocks(node: ast.If | ast.IfLet, tokens: _Tokens) -> tuple[list[int], int | None]:
    """The offsets of the `{` of `node`'s blocks, and the start of its `else if`'s `if` (whose
    blocks are of the same chain), if it has one."""
    condition = node.condition if isinstance(node, ast.If) else node.source
    then = tokens.first("{", condition.span.end)
    out = [then]
    if node.otherwise is not None:
        after = node.then[-1].span.end if node.then else then
        otherwise = tokens.first("else", after)
        nested = node.otherwise[0] if len(node.otherwise) == 1 else None
        if nested is not None and tokens.first("{", otherwise) > nested.span.start:
            return out, nested.span.start  # `else if`
        out.append(tokens.first("{", otherwise))
    return out, None


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
        for name in _names(type(current)):
            value = getattr(current, name)
            for child in value if isinstance(value, list | tuple) else (value,):
                if _is_node(child):
                    stack.append(child)
                elif isinstance(child, tuple):
                    stack += [x for x in child if _is_node(x)]


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    """The field names of a node class (looked up once: the walk visits thousands of nodes)."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _is_node(value: object) -> bool:
    return hasattr(type(value), "__dataclass_fields__") and not isinstance(value, Span)
