"""The syntax tree built while the LALR parser reduces: each rule's node is made the moment the rule
is recognised, so no lark `Tree` is built for it and no second walk over a tree follows.

That halves the cost of parsing a large model. lark's own way (a tree with `propagate_positions`,
then a `Transformer` with `v_args(meta=True)`) builds a tree node and a meta object per rule, reads
six position attributes per node, and wraps every callback again on every call.

Each rule's callback is lark's child filter for that rule (it drops anonymous tokens and splices in
inlined `_rules`) around the tree builder's method of the rule's name. `_Positions` around that
gives the method the span lark's `propagate_positions` gives a tree's meta: from the first child
that has a position to the end of the last one, counting the tokens the filter then drops, and, for
a `?rule` that passes its one child through (`"(" expr ")"`), the child's own value spanning the
parentheses in its parent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from loom.lang.syntax.builder import Builder, End, Positions, Start
from loom.lang.syntax.grammar import lark_parser

if TYPE_CHECKING:
    from lark import Tree
    from lark.grammar import Rule

# lark is imported where it is used, not at the top: a process whose texts the fast parser reads
# all (`descent.py`) never loads it.


class Reduced:
    """A reduced rule on the parser's value stack: the node the builder made, and the text it
    covers in its parent. `children` is the filtered children of an inlined `_rule`, which lark's
    child filter splices into the parent."""

    __slots__ = ("children", "end", "start", "value")

    def __init__(self, value: Any, start: Start, end: End, children: list[Any] | None) -> None:
        self.value = value
        self.start = start
        self.end = end
        self.children = children


class _Positions:
    __slots__ = ("build", "builder", "passes_through")

    def __init__(
        self, builder: Builder, build: Callable[[list[Any]], Any], passes_through: bool
    ) -> None:
        self.builder = builder
        self.build = build
        self.passes_through = passes_through

    def __call__(self, children: list[Any]) -> Any:
        if self.passes_through and len(children) == 1:
            # `?sum: product`: most reductions are of this kind, and give the child unchanged
            return children[0]
        start, end = _start(children), _end(children)
        self.builder.here = (start, end)
        value = self.build(children)
        if isinstance(value, str) and type(value) is not str:
            return value  # a `?rule`'s lone token keeps its own position, as in lark
        if type(value) is Reduced:  # a `?rule`'s lone child, now spanning the rule's text
            return Reduced(value.value, start, end, value.children)
        if type(value) is _Inlined:
            return Reduced(value, start, end, value)
        return Reduced(value, start, end, None)


def _start(children: list[Any]) -> Start:
    for c in children:
        if type(c) is not Reduced:
            return (c.line, c.column, c.start_pos)
        if c.start is not None:
            return c.start
    return None


def _end(children: list[Any]) -> End:
    for c in reversed(children):
        if type(c) is not Reduced:
            return (c.end_line, c.end_column, c.end_pos)
        if c.end is not None:
            return c.end
    return None


def _method(builder: Builder, name: str) -> Callable[[list[Any]], Any]:
    """The callback for the rule `name`: the builder's method of that name, given the positions
    and the children's values; a rule the builder has no method for (an inlined `_rule`) keeps its
    children, for the parent to splice."""
    found = getattr(builder, name, None)
    if found is None:
        if name.startswith("_"):
            return _keep
        return functools.partial(_tree, name)
    method: Callable[[Positions, list[Any]], Any] = found

    def call(children: list[Any]) -> Any:
        return method(builder.here, [c.value if type(c) is Reduced else c for c in children])

    return call


class _Inlined(list[Any]):
    """The children of an inlined `_rule`, for the parent's child filter to splice in."""


def _keep(children: list[Any]) -> _Inlined:
    return _Inlined(children)


def _tree(name: str, children: list[Any]) -> Tree[Any]:
    from lark import Tree  # here (start-up)

    return Tree(name, [c.value if type(c) is Reduced else c for c in children])


@dataclass(frozen=True)
class _Rule:
    rule: Rule  # the parse table's own object, so the parser's look-up of it is by identity
    chain: list[Callable[[Callable[[list[Any]], Any]], Callable[[list[Any]], Any]]]
    name: str  # of the builder's method
    passes_through: bool  # a `?rule` alternative without an alias, which may give its one child


@functools.cache
def _rules() -> list[_Rule]:
    from lark import Tree  # here (start-up)
    from lark.grammar import Rule
    from lark.parse_tree_builder import ParseTreeBuilder

    frontend = lark_parser().parser
    table = frontend.parser._parse_table
    reduced = {arg for actions in table.states.values() for _, arg in actions.values()}
    own = {r: r for r in reduced if isinstance(r, Rule)}
    # lark's tree builder without position propagation: its child filter and single-child
    # expansion for each rule, which `_callbacks` wraps around the builder's methods
    builders = ParseTreeBuilder(  # type: ignore[no-untyped-call]  # lark's private API, untyped
        lark_parser().rules, Tree, propagate_positions=False
    )
    return [
        _Rule(
            own.get(rule, rule),
            chain,
            rule.alias or rule.options.template_source or rule.origin.name,
            bool(rule.options.expand1 and not rule.alias),
        )
        for rule, chain in builders.rule_builders
    ]


def _callbacks(builder: Builder) -> dict[Any, Callable[[list[Any]], Any]]:
    # keyed by rule (lark's own tree builder does the same; its annotation says by name)
    out: dict[Any, Callable[[list[Any]], Any]] = {}
    for r in _rules():
        f = _method(builder, r.name)
        for wrap in r.chain:
            f = wrap(f)
        out[r.rule] = _Positions(builder, f, r.passes_through)
    return out


def parse(text: str, builder: Builder) -> Any:
    """The value `builder` makes of the `start` rule of `text`. Raises lark's `UnexpectedInput`
    at the first syntax error, with the parser's state at that point (`interactive_parser`)."""
    from lark.lexer import LexerThread  # here (start-up)
    from lark.parsers.lalr_parser import _Parser

    frontend = lark_parser().parser
    parser = _Parser(frontend.parser._parse_table, _callbacks(builder))
    result = parser.parse(LexerThread.from_text(frontend.lexer, text), "start")
    return result.value if type(result) is Reduced else result
