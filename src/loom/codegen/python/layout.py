"""Laying out generated Python so that it is already formatted.

The generated code must pass `ruff format --check` without running a formatter at generation time.
The rule used everywhere: a bracketed construct (call, signature, import list) is written on one line
when the whole line fits in `LINE_LENGTH` columns, otherwise exploded one item per line with a trailing
("magic") comma. ruff keeps both shapes as they are, for any configured line length of 88 or more.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

LINE_LENGTH = 88
INDENT = "    "


@dataclass(frozen=True)
class Group:
    """`head item, item, ... tail`, e.g. Group("require(", [...], ")")."""

    head: str
    items: Sequence[Doc]
    tail: str


Doc = str | Group


def flat(doc: Doc) -> str:
    if isinstance(doc, str):
        return doc
    # most items are text: taken as they are, without a call each
    return doc.head + ", ".join([i if type(i) is str else flat(i) for i in doc.items]) + doc.tail


def lay(doc: Doc, indent: int = 0, suffix: str = "") -> list[str]:
    """Lines (with indentation) for `doc` at `indent` levels, followed by `suffix`."""
    pad = INDENT * indent
    if isinstance(doc, str):
        # most lines are plain text that fits: answered before any splitting is considered
        text = doc + suffix
        if len(pad) + len(text) <= LINE_LENGTH:
            return [pad + text]
        if not suffix:
            return _split_statement(doc, indent)
        return _split_item(doc, indent, suffix) or [pad + text]
    text = flat(doc) + suffix
    if not doc.items or len(pad) + len(text) <= LINE_LENGTH:
        return [pad + text]
    lines = [pad + doc.head]
    for item in doc.items:
        lines.extend(lay(item, indent + 1, ","))
    lines.append(pad + doc.tail + suffix)
    return lines


_OPEN, _CLOSE = "([{", ")]}"
_PRIORITY = [  # black/ruff delimiter priorities, highest first
    (" if ", " else "),
    (" or ", " and "),
    (" == ", " != ", " < ", " <= ", " > ", " >= ", " is ", " is not ", " in ", " not in "),
    (" + ", " - "),
    (" * ", " / ", " % ", " // "),
]


# A string literal, its quotes included; an unterminated one runs to the end of the text.
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*(?:\"|\\?\Z)|'(?:[^'\\]|\\.)*(?:'|\\?\Z)", re.DOTALL)


def _outside_strings(text: str) -> Iterator[tuple[int, str]]:
    """(index, character) of each character of `text` outside its string literals."""
    start = 0
    for literal in _STRING.finditer(text):
        for i in range(start, literal.start()):
            yield i, text[i]
        start = literal.end()
    for i in range(start, len(text)):
        yield i, text[i]


def _scan(text: str) -> tuple[list[tuple[int, str]], int]:
    """Top-level (outside brackets and strings) delimiters of an expression, and the index of
    the opening bracket matching a final closing one (-1 when the text does not end with one)."""
    found: list[tuple[int, str]] = []
    depth, last_open, after = 0, -1, 0
    stack: list[int] = []
    for i, ch in _outside_strings(text):
        if i < after:  # inside an operator already found
            continue
        if ch in _OPEN:
            stack.append(i)
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            last_open = stack.pop() if stack else -1
        elif depth == 0 and ch == " ":  # every delimiter starts with a space
            for level, ops in enumerate(_PRIORITY):
                op = next((o for o in ops if text.startswith(o, i)), None)
                if op is not None:
                    found.append((level, op))
                    after = i + len(op)
                    break
    ends_with_bracket = bool(text) and text[-1] in _CLOSE and depth == 0
    return found, (last_open if ends_with_bracket else -1)


def _split_args(inner: str) -> list[str]:
    parts: list[str] = []
    depth, start = 0, 0
    for i, ch in _outside_strings(inner):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    if inner[start:].strip():
        parts.append(inner[start:].strip())
    return parts


def _split_item(text: str, indent: int, suffix: str) -> list[str] | None:
    """An item of an exploded bracket (`price=Money(…)`) too long for its line, laid out the way
    ruff format leaves it: its own trailing bracket exploded, one argument a line. None when the
    item is not one call (operators at its top level)."""
    delimiters, open_at = _scan(text)
    if open_at <= 0 or delimiters:
        return None
    head, inner = text[: open_at + 1], text[open_at + 1 : -1]
    if not inner or " for " in inner or len(INDENT * indent + head) > LINE_LENGTH:
        return None
    return lay(Group(head, _split_args(inner), text[-1]), indent, suffix)


def _split_statement(text: str, indent: int) -> list[str]:
    """A statement too long for one line, laid out the way ruff format leaves it: a trailing
    bracket exploded (one item a line, magic trailing comma) when the rest reads without
    parentheses, else the right-hand side of an assignment / return wrapped in parentheses."""
    pad = INDENT * indent
    prefix, expr = "", text
    for lead in ("return ", "raise "):
        if text.startswith(lead):
            prefix, expr = lead, text[len(lead) :]
            break
    else:
        head, sep, rest = text.partition(" = ")
        if sep and _scan(head)[0] == [] and "(" not in head:
            prefix, expr = head + sep, rest
    delimiters, open_at = _scan(expr)
    top = [d for d in delimiters if d[0] == min((d[0] for d in delimiters), default=0)]
    if open_at > 0 or (open_at == 0 and not delimiters):
        head = prefix + expr[: open_at + 1]
        inner = expr[open_at + 1 : -1]
        if (not delimiters or len(top) == 1) and inner and len(pad + head) <= LINE_LENGTH:
            if " for " in inner:  # a comprehension: no trailing comma
                return [pad + head, pad + INDENT + inner, pad + expr[-1]]
            items = _split_args(inner)
            return lay(Group(head, items, expr[-1]), indent)
    # parentheses only where ruff adds them at any line length from 88 to 100
    fits_inside = len(pad) + len(INDENT) + len(expr) <= LINE_LENGTH
    if prefix and delimiters and fits_inside and len(pad) + len(text) > 100:
        return [pad + prefix + "(", pad + INDENT + expr, pad + ")"]
    return [pad + text]


def call(func: str, args: Iterable[Doc], prefix: str = "", tail: str = "") -> Group:
    return Group(f"{prefix}{func}(", list(args), ")" + tail)
