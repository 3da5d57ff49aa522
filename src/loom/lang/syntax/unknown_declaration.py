"""The one syntax error both the parser and the tree builder report: a word that starts no
declaration (`agregate Foo { … }` reads as far as a `channel`, whose first word is free; at the top
level, `deploymnet Foo { … }` as far as a `deployable`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom.lang.diagnostics import Sink, Span, did_you_mean

if TYPE_CHECKING:
    from lark import Token

# What may start a declaration of a context (`channel` and `resource` are words, not keywords: see grammar.lark).
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
    "resource",
    "response",
    "retrieval",
    "timer",
    "value",
    "workflow",
)

# What may start a declaration beside the contexts (`deployable` and `channelSource` are words too).
TOP_LEVEL_WORDS = ("channelSource", "context", "deployable")


def report_unknown_declaration(
    file: str, word: Token, sink: Sink, *, top_level: bool = False
) -> None:
    span = Span(
        file,
        word.line or 1,
        word.column or 1,
        word.end_line or word.line or 1,
        word.end_column or (word.column or 1) + len(str(word)),
        word.start_pos or 0,
        word.end_pos or 0,
    )
    words = TOP_LEVEL_WORDS if top_level else DECLARATION_WORDS
    sink.report(
        "loom.syntax-error",
        f"unknown declaration `{word}`; expected one of " + ", ".join(f"`{w}`" for w in words),
        span,
        "not a declaration",
        help=did_you_mean(str(word), words)
        or (
            "a model declares contexts, deployables and channel sources; the other declarations "
            "go inside a `context`"
            if top_level
            else "a context declares aggregates, repositories, events, workflows, projections, "
            "channels and the other declarations of docs/language.md"
        ),
    )
