"""The one syntax error both the parser and the tree builder report: a word that starts no
declaration (`agregate Foo { … }` reads as far as a `channel`, whose first word is free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom.lang.diagnostics import Sink, Span, did_you_mean

if TYPE_CHECKING:
    from lark import Token

# What may start a declaration of a context (`channel` is a word, not a keyword: see grammar.lark).
DECLARATION_WORDS = (
    "aggregate",
    "channel",
    "command",
    "commandHandler",
    "criterion",
    "domainService",
    "enum",
    "error",
    "event",
    "projection",
    "query",
    "queryHandler",
    "repository",
    "response",
    "retrieval",
    "timer",
    "value",
    "workflow",
)


def report_unknown_declaration(file: str, word: Token, sink: Sink) -> None:
    span = Span(
        file,
        word.line or 1,
        word.column or 1,
        word.end_line or word.line or 1,
        word.end_column or (word.column or 1) + len(str(word)),
        word.start_pos or 0,
        word.end_pos or 0,
    )
    sink.report(
        "loom.syntax-error",
        f"unknown declaration `{word}`; expected one of "
        + ", ".join(f"`{w}`" for w in DECLARATION_WORDS),
        span,
        "not a declaration",
        help=did_you_mean(str(word), DECLARATION_WORDS)
        or "a context declares aggregates, repositories, events, workflows, projections, "
        "channels and the other declarations of docs/language.md",
    )
