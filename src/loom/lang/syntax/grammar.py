"""The grammar (`grammar.lark`) and the one LALR parser built from it, with what other tools read
from it: the patterns of its terminals and the keywords it reserves at a given place. The codemod
scans text with these, so it can never disagree with the parser about what a name or a string is.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lark import Lark

GRAMMAR = Path(__file__).with_name("grammar.lark")


@functools.cache
def lark_parser() -> Lark:
    # Here, not at the top (start-up): a text the fast parser reads never needs lark.
    from lark import Lark

    # Built once per process: constructing the LALR tables is most of the cost of a small compile.
    return Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        # Lark keeps the built tables in the temp folder, keyed by a hash of the grammar and its
        # options, so a fresh process (each `loom check`) skips most of the build; a missing or
        # broken cache file only means a rebuild.
        cache=True,
    )


def terminal_pattern(name: str) -> str:
    """The regular expression of a named terminal (`NAME`, `STRING`, `LINE_COMMENT`, ...)."""
    return lark_parser().get_terminal(name).pattern.to_regexp()


@functools.cache
def keywords_after(prefix: str) -> frozenset[str]:
    """The words the contextual lexer reads as keywords right after `prefix` (a start of a file):
    there, and only there, such a word cannot be a name."""
    state = lark_parser().parse_interactive(prefix)
    state.exhaust_lexer()
    words = lark_parser().terminals
    patterns = {t.name: t.pattern for t in words}
    return frozenset(
        p.value
        for name in state.accepts()  # type: ignore[no-untyped-call]  # lark's, untyped
        if (p := patterns.get(name)) is not None and p.type == "str" and p.value.isidentifier()
    )
