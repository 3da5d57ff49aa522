"""The canonical layout of a file that parses, from its tokens, its comments and its anchors.

Newlines are not significant in Loom, so the layout only moves whitespace: the tokens and the
comments come out in the order they went in, with the same text (`renamed   from` aside, which is
one token and comes out as `renamed from`). The rules, in the order they apply:

- line breaks are the author's, with these exceptions: a `{` and an `else` join the line before
  (unless a comment ends it), a declaration, member or statement that is not the first of its
  braces starts a line, and a line comment ends one;
- a pair of brackets is either on one line or broken: its contents start a line after the opener,
  one step deeper, and the closer starts a line at the opener's depth. A pair is broken when a line
  break lies inside it. A `(` or `[` whose only content is another pair hugs it (`f({` … `})`);
- a line that continues the one before (it is no item of a list, and the line before ends with an
  operator or it starts with one, a `.` or a clause such as `requires`) is indented one step more;
- blank lines: at most one, none at the start or end of a file or of a pair of brackets;
- spaces: one around binary operators, after `,` and `:`, inside `{ }`; none inside `( )` and
  `[ ]`, around `.`, after a sign, before `?` of an optional type or `(` of a call;
- two spaces of indentation a step; a line is never split or joined for its length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.lang.format.anchors import Anchors
from loom.lang.syntax.scan import END, Tokens

INDENT = "  "
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = frozenset(_OPENERS.values())
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_LINE, _BLOCK = "//", "/*"
_OPERATORS = frozenset(
    {"=", ":=", "+=", "-=", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "+", "-", "*", "/"}
    | {"%", "?", ":", "..", "!"}
)
# a line that starts after one of these, or with one of those, continues the line before
_CONTINUED = _OPERATORS - {"!"}
_CONTINUING = _OPERATORS | {".", "requires", "when", "by", "message", "ignoring", "in", "of"}
_CONTINUING |= {"immutable", "readOnly", "RENAMED_FROM", "terminal", "with", "for", "every"}
# words after which `(` opens a parenthesised expression, not a call's or a declaration's list
_EXPR_WORDS = frozenset(
    {"if", "when", "requires", "return", "in", "by", "precondition", "invariant", "at", "after"}
    | {"filter", "message", "else"}
)


@dataclass(frozen=True, slots=True)
class Item:
    """A token or a comment (kind `//` or `/*`), where it is and how many newlines precede it."""

    kind: str
    text: str
    start: int
    newlines: int

    @property
    def comment(self) -> bool:
        return self.kind in (_LINE, _BLOCK)

    @property
    def word(self) -> bool:
        return not self.comment and (self.kind == "NAME" or self.text[:1].isalpha())


def items(text: str, tokens: Tokens) -> list[Item]:
    """The tokens (without `END`) and the comments of `text`, in order."""
    out: list[Item] = []
    end = 0
    for kind, token, start in zip(tokens.kinds, tokens.texts, tokens.offsets, strict=True):
        at = len(text) if kind == END else start
        for m in _COMMENT.finditer(text, end, at):
            out.append(_item(_LINE if m[0][1] == "/" else _BLOCK, m[0], m.start(), text, end))
            end = m.end()
        if kind == END:
            break
        shown = "renamed from" if kind == "RENAMED_FROM" else token
        out.append(_item(kind, shown, start, text, end))
        end = start + len(token)
    return out


def _item(kind: str, token: str, start: int, text: str, after: int) -> Item:
    return Item(
        kind, token.rstrip() if kind == _LINE else token, start, text.count("\n", after, start)
    )


def layout(found: list[Item], anchors: Anchors) -> str:
    """The text of `found` laid out canonically."""
    if not found:
        return ""
    breaks = _breaks(found, anchors)
    return _render(found, breaks, anchors)


def _breaks(found: list[Item], anchors: Anchors) -> list[int]:
    """Per item, what precedes it: 0 a space or nothing, 1 a line break, 2 a blank line."""
    breaks = [0] * len(found)
    for i in range(1, len(found)):
        prev, cur = found[i - 1], found[i]
        brk = min(cur.newlines, 2)
        if prev.kind == _LINE:
            brk = max(brk, 1)
        elif brk and not prev.comment and _joins(prev, cur):
            brk = 0
        breaks[i] = brk
        if cur.start in anchors.own_line and not cur.comment:
            lead = i  # a block comment just before a member, on its line, goes with it
            while lead > 1 and not found[lead].newlines and found[lead - 1].kind == _BLOCK:
                lead -= 1
            breaks[lead] = max(breaks[lead], 1)
    pairs = _pairs(found)
    closer_of = dict(pairs)
    # the `{` of a broken block of an if, by offset: all the blocks of its chain break
    forced = set(anchors.broken)
    block_at = {found[o].start: c for o, c in pairs if found[o].kind == "{"}
    # to a fixed point: a pair broken may break the pair around it, or an `if`'s other blocks,
    # which laid out again would then break (formatting twice must change nothing)
    while True:
        before, was_forced = list(breaks), len(forced)
        for opener, closer in pairs:
            _break_pair(found, breaks, opener, closer, closer_of, forced)
        for chain in anchors.if_chains:
            if any(breaks[block_at[b]] for b in chain if b in block_at):
                forced |= chain
        if breaks == before and len(forced) == was_forced:
            break
    breaks[0] = 0
    return breaks


def _break_pair(
    found: list[Item],
    breaks: list[int],
    opener: int,
    closer: int,
    closer_of: dict[int, int],
    forced: set[int],
) -> None:
    """Lay out the pair `opener` … `closer`: on one line, or broken if it must be."""
    if closer == opener + 1:  # `{ }`, `()`: empty, on one line
        breaks[closer] = 0
    elif found[opener].kind != "{" and closer_of.get(opener + 1) == closer - 1:  # `f({` … `})`
        breaks[opener + 1] = breaks[closer] = 0
    elif (
        found[opener].start in forced
        or any(breaks[opener + 1 : closer + 1])
        or any(found[k].kind == _LINE for k in range(opener + 1, closer))
    ):
        first = opener + 1
        if found[first].comment and not breaks[first]:  # the opener's trailing comment
            first += 1
        breaks[first] = 1
        breaks[closer] = 1


def _joins(prev: Item, cur: Item) -> bool:
    """Whether `cur` belongs at the end of the line `prev` ends: a block's `{` after its header,
    an `else` after the `}` it follows."""
    return (cur.kind == "{" and prev.kind not in ("(", "[", ",")) or cur.kind == "else"


def _pairs(found: list[Item]) -> list[tuple[int, int]]:
    """The bracket pairs (opener, closer) in the order they close: inner pairs first."""
    stack: list[int] = []
    out: list[tuple[int, int]] = []
    for i, item in enumerate(found):
        if item.kind in _OPENERS:
            stack.append(i)
        elif item.kind in _CLOSERS:
            out.append((stack.pop(), i))
    return out


def _render(found: list[Item], breaks: list[int], anchors: Anchors) -> str:
    lines: list[str] = []
    parts: list[str] = []
    level = base = 0  # the depth of the line being written, and of its statement
    stack: list[tuple[int, int]] = []  # per open bracket: (depth inside, depth of its line)
    last_token: Item | None = None
    for i, item in enumerate(found):
        if i and breaks[i]:
            lines.append("".join(parts))
            if breaks[i] == 2:
                lines.append("")
            level, base = _depth(item, last_token, stack, anchors)
            parts = [INDENT * level]
        elif i:
            parts.append(" " if _space(found[i - 1], item, anchors) else "")
        parts.append(item.text)
        if item.kind == "{":  # a block's body is one step deeper than its statement
            stack.append((base + 1, base))
        elif item.kind in _OPENERS:  # a list's items, than the line it starts on
            stack.append((level + 1, level))
        elif item.kind in _CLOSERS:
            stack.pop()
        if not item.comment:
            last_token = item
    lines.append("".join(parts))
    return "\n".join(lines) + "\n"


def _depth(
    item: Item, last_token: Item | None, stack: list[tuple[int, int]], anchors: Anchors
) -> tuple[int, int]:
    """The depth of a line starting with `item`, and of the statement it is part of."""
    if item.kind in _CLOSERS:
        return stack[-1][1], stack[-1][1]
    base = stack[-1][0] if stack else 0
    if item.comment or item.start in anchors.starts or last_token is None:
        return base, base
    return base + (last_token.kind in _CONTINUED or item.kind in _CONTINUING), base


def _space(a: Item, b: Item, anchors: Anchors) -> bool:
    """Whether a space separates `a` and `b` on one line."""
    if a.comment or b.comment:
        return True
    if a.kind in ("(", "[", ".", "!") or b.kind in (")", "]", ",", "."):
        return False
    if a.kind == "{" or b.kind == "}":
        return True
    if b.kind in (":", "?"):
        return b.start in anchors.ternary
    if a.kind == "-" and a.start not in anchors.binary:  # a sign
        return False
    if b.kind == "(":
        return not ((a.word and a.text not in _EXPR_WORDS) or a.kind in (")", "]"))
    if b.kind == "[":
        return not (a.kind in ("NAME", ")") or a.text == "id")
    return True
