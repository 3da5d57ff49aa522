"""What every rule of the tree builder reads its children with: the spans of rules and tokens,
the text of string literals, durations in milliseconds; and the report of a word written twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom.lang.diagnostics import Sink, Span
from loom.lang.syntax.builder import Builder, Positions

if TYPE_CHECKING:
    from lark import Token


def _unescape(raw: str) -> tuple[str, str | None]:
    """Decode a string literal (with its quotes). Returns the text and the first bad escape, if any."""
    if "\\" not in raw:
        return raw[1:-1], None  # most strings: nothing to decode
    out: list[str] = []
    bad: str | None = None
    i, body = 0, raw[1:-1]
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0"}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
            else:
                bad = bad or "\\" + nxt
                out.append(nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out), bad


_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def millis(text: str) -> int:
    """`100ms`, `1s`, `5m`, `2h`, `1d` in milliseconds."""
    digits = text.rstrip("smhd")
    return int(digits) * _UNIT_MS[text[len(digits) :]]


class TokenReader(Builder):
    """The base of the tree builder's rules (`tree_to_ast.Build`): the file they build, the sink
    they report to, and the readings every rule shares."""

    def __init__(self, file: str, sink: Sink) -> None:
        self.file = file
        self.sink = sink

    def sp(self, meta: Positions) -> Span:
        start, end = meta
        if start is None or end is None:  # a rule that matched no text
            return Span(self.file, 1, 1, 1, 1)
        return Span(self.file, start[0], start[1], end[0], end[1], start[2], end[2])

    def _once_each(self, words: list[tuple[str, Span]], what: str) -> None:
        """A modifier, trait or `ignoring` filter written twice is a mistake (the second one may
        say something the first does not, `transactional transactional(serializable)`), never
        merged silently."""
        first: dict[str, Span] = {}
        for word, span in words:
            if word not in first:
                first[word] = span
                continue
            self.sink.report(
                "loom.duplicate-modifier",
                f"the {what} `{word}` is written twice",
                span,
                f"`{word}` again",
                secondary=[(first[word], "first written here")],
                help="keep one `transactional`, with the isolation level you mean (e.g. "
                "`transactional(serializable)`), and remove the other"
                if word == "transactional"
                else f"remove the second `{word}`",
            )

    def tsp(self, tok: Token) -> Span:
        return Span(
            self.file,
            tok.line or 1,
            tok.column or 1,
            tok.end_line or 1,
            tok.end_column or 1,
            tok.start_pos or 0,
            tok.end_pos or 0,
        )

    def _string(self, tok: Token) -> str:
        value, bad = _unescape(str(tok))
        if bad:
            self.sink.report(
                "loom.invalid-escape",
                f"unknown escape sequence `{bad}` in a string",
                self.tsp(tok),
                "unknown escape",
                help='use one of `\\n`, `\\t`, `\\r`, `\\"`, `\\\\`, `\\0`',
            )
        return value
