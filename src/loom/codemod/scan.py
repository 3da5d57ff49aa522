"""The scanner of `loom fix handle` (handles.py): the structure of a Loom file read from its
tokens, without the compiler's parser (see handles.py for why).

It tokenises with the grammar's own terminals, matches brackets, and reads contexts, their
workflows / handlers / repositories / aggregates, and each workflow's members.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from loom.lang.syntax.grammar import keywords_after, terminal_pattern

# Where a workflow member starts, the lexer reads these words as keywords, so none of them names a
# state field there (`id`, `for`, `message`, ... may).
_MEMBER_START = "context C { workflow W { "


class CodemodError(Exception):
    """A file the codemod cannot read as Loom; the message names the place."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


# --------------------------------------------------------------------------------------------------
# Tokens


@dataclass
class Tok:
    kind: str  # name | str | num | op
    text: str
    start: int
    end: int


# Comments, strings, numbers and names are the grammar's own terminals; anything else is one
# operator character (or a two-character one), which is all the structure the codemod reads.
_TOKEN_RE = re.compile(
    "|".join(
        [
            r"(?P<ws>[ \t\r\n\f\ufeff]+)",
            f"(?P<lc>{terminal_pattern('LINE_COMMENT')})",
            f"(?P<bc>{terminal_pattern('BLOCK_COMMENT')})",
            f"(?P<str>{terminal_pattern('STRING')})",
            f"(?P<num>{terminal_pattern('DECIMAL')}|{terminal_pattern('INT')})",
            f"(?P<name>{terminal_pattern('NAME')})",
            r"(?P<op>:=|\+=|-=|==|!=|<=|>=|&&|\|\||[^\sA-Za-z0-9_])",
        ]
    )
)

OPEN = {"{": "}", "(": ")", "[": "]"}
CLOSE = {v: k for k, v in OPEN.items()}


class Text:
    """A file's text with offset -> line/column."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def pos(self, offset: int) -> tuple[int, int]:
        i = bisect.bisect_right(self.line_starts, offset) - 1
        return i + 1, offset - self.line_starts[i] + 1

    def line_start(self, offset: int) -> int:
        return self.line_starts[bisect.bisect_right(self.line_starts, offset) - 1]

    def line_end(self, offset: int) -> int:
        """Offset of the `\\n` ending the line holding `offset` (or len(text))."""
        n = self.text.find("\n", offset)
        return len(self.text) if n < 0 else n

    def error(self, message: str, offset: int) -> CodemodError:
        line, col = self.pos(offset)
        return CodemodError(message, line, col)


def tokenize(src: Text) -> list[Tok]:
    text = src.text
    toks: list[Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if text.startswith("/*", pos) and (m is None or m.lastgroup != "bc"):
            raise src.error("unterminated block comment (`/*` is never closed)", pos)
        if text[pos] == '"' and (m is None or m.lastgroup != "str"):
            raise src.error('unterminated string literal (close it with `"` on the same line)', pos)
        assert m is not None  # the last alternative matches any one character
        kind = m.lastgroup or "op"
        if kind in ("name", "str", "num", "op"):
            toks.append(Tok(kind, m.group(), m.start(), m.end()))
        pos = m.end()
    return toks


def match_brackets(src: Text, toks: list[Tok]) -> dict[int, int]:
    """Token index of each opening bracket -> index of its closing one; mismatches are errors."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for i, t in enumerate(toks):
        if t.kind != "op":
            continue
        if t.text in OPEN:
            stack.append(i)
        elif t.text in CLOSE:
            if not stack:
                raise src.error(f"unexpected `{t.text}` (nothing is open here)", t.start)
            j = stack.pop()
            if toks[j].text != CLOSE[t.text]:
                line, col = src.pos(toks[j].start)
                raise src.error(
                    f"`{t.text}` does not close the `{toks[j].text}` opened at {line}:{col}",
                    t.start,
                )
            pairs[j] = i
    if stack:
        t = toks[stack[-1]]
        raise src.error(f"`{t.text}` is never closed", t.start)
    return pairs


# --------------------------------------------------------------------------------------------------
# Structure


@dataclass
class Handle:
    kw: int  # token index of `handle`
    name: str
    params: list[str]
    params_close: int  # token index of `)`
    header: list[int]  # token indexes between `)` and the body's `{`
    body_open: int
    body_close: int


@dataclass
class Workflow:
    name: str
    kw: int
    open: int
    close: int
    transactional: str | None  # None, "" (bare) or the isolation level
    event_sourced: bool
    state: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)
    handles: list[Handle] = field(default_factory=list)
    other_members: bool = False  # anything besides handles


@dataclass
class Context:
    name: str
    workflows: list[Workflow] = field(default_factory=list)
    handlers: dict[str, str] = field(default_factory=dict)  # name -> "commandHandler"/...
    repositories: dict[str, str] = field(default_factory=dict)  # repo -> aggregate
    aggregates: set[str] = field(default_factory=set)


@dataclass
class Scanned:
    src: Text
    toks: list[Tok]
    pairs: dict[int, int]
    contexts: list[Context]


def scan(text: str) -> Scanned:
    src = Text(text)
    toks = tokenize(src)
    pairs = match_brackets(src, toks)
    contexts: list[Context] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if (
            t.text == "context"
            and t.kind == "name"
            and i + 2 < len(toks)
            and toks[i + 1].kind == "name"
            and toks[i + 2].text == "{"
        ):
            ctx = Context(toks[i + 1].text)
            _scan_context(src, toks, pairs, ctx, i + 3, pairs[i + 2])
            contexts.append(ctx)
            i = pairs[i + 2] + 1
        elif t.text in OPEN and t.kind == "op":
            i = pairs[i] + 1
        else:
            i += 1
    return Scanned(src, toks, pairs, contexts)


def name_at(toks: list[Tok], i: int) -> str | None:
    return toks[i].text if i < len(toks) and toks[i].kind == "name" else None


def _scan_context(
    src: Text, toks: list[Tok], pairs: dict[int, int], ctx: Context, i: int, end: int
) -> None:
    while i < end:
        t = toks[i]
        prev = toks[i - 1].text if i > 0 else ""
        if t.kind == "op" and t.text in OPEN:
            i = pairs[i] + 1
            continue
        if t.kind == "name" and prev != "." and name_at(toks, i + 1):
            name = toks[i + 1].text
            if t.text in ("commandHandler", "queryHandler"):
                ctx.handlers.setdefault(name, t.text)
            elif t.text == "aggregate":
                ctx.aggregates.add(name)
            elif t.text == "repository" and name_at(toks, i + 2) == "for" and name_at(toks, i + 3):
                ctx.repositories[name] = toks[i + 3].text
            elif t.text == "workflow":
                i = _scan_workflow(src, toks, pairs, ctx, i, end)
                continue
        i += 1


def _scan_workflow(
    src: Text, toks: list[Tok], pairs: dict[int, int], ctx: Context, kw: int, end: int
) -> int:
    name = toks[kw + 1].text
    j = kw + 2
    tx: str | None = None
    event_sourced = False
    while j < end and toks[j].text != "{":
        t = toks[j]
        if t.text == "transactional":
            tx = ""
            if j + 3 < end and toks[j + 1].text == "(" and toks[j + 3].text == ")":
                tx = toks[j + 2].text
        elif t.text == "eventSourced":
            event_sourced = True
        j = pairs[j] + 1 if t.text in ("(", "[") else j + 1
    if j >= end:
        raise src.error(f"workflow `{name}` has no body (`{{` expected)", toks[kw].start)
    wf = Workflow(name, kw, j, pairs[j], tx, event_sourced)
    k = j + 1
    while k < wf.close:
        t = toks[k]
        prev = toks[k - 1].text
        if t.kind == "op" and t.text in OPEN:
            wf.other_members = True
            k = pairs[k] + 1
            continue
        if t.kind == "name" and t.text == "handle" and prev != "." and name_at(toks, k + 1):
            h = _scan_handle(src, toks, pairs, k, wf.close)
            wf.handles.append(h)
            k = h.body_close + 1
            continue
        wf.other_members = True
        if t.kind == "name" and t.text == "function" and name_at(toks, k + 1):
            wf.functions.add(toks[k + 1].text)
        elif (
            t.kind == "name"
            and toks[k + 1].text == ":"
            and prev not in (".", "?")
            and t.text not in keywords_after(_MEMBER_START)
        ):
            wf.state.add(t.text)
        k += 1
    ctx.workflows.append(wf)
    return wf.close + 1


def _scan_handle(src: Text, toks: list[Tok], pairs: dict[int, int], kw: int, end: int) -> Handle:
    name = toks[kw + 1].text
    if toks[kw + 2].text != "(":
        raise src.error(
            f"`handle {name}` must be followed by its parameters `(…)`", toks[kw + 1].end
        )
    close = pairs[kw + 2]
    params: list[str] = []
    expect_name = True
    j = kw + 3
    while j < close:
        t = toks[j]
        if t.text in ("(", "[", "{"):
            j = pairs[j] + 1
            continue
        if expect_name and t.kind == "name":
            params.append(t.text)
            expect_name = False
        elif t.text == ",":
            expect_name = True
        j += 1
    header: list[int] = []
    j = close + 1
    while j < end and toks[j].text != "{":
        header.append(j)
        if toks[j].text in ("(", "["):
            header.extend(range(j + 1, pairs[j] + 1))
            j = pairs[j] + 1
        else:
            j += 1
    if j >= end:
        raise src.error(f"`handle {name}` has no body (`{{` expected)", toks[kw].start)
    return Handle(kw, name, params, close, header, j, pairs[j])
