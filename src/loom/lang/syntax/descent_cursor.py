"""The fast parser's cursor (`descent.py`): the tokens, where it is, and the tokens and positions it
hands the tree builder, as lark would. Anything it cannot be sure of raises `GiveUp`."""

from __future__ import annotations

from typing import Any

from loom.lang.syntax.builder import Positions, Token
from loom.lang.syntax.scan import NAME, Tokens, grammar
from loom.lang.syntax.tree_to_ast import Build


class GiveUp(Exception):
    """The text is not one this parser can be sure of: lark parses it instead."""


GIVE_UP = GiveUp()
_new_str = str.__new__

# the first word of each declaration in a context, and of each statement
PAYLOAD_KINDS = frozenset({"command", "query", "response", "error"})
CMP = frozenset({"==", "!=", "<", "<=", ">", ">=", "in"})
ADD = frozenset({"+", "-"})
MUL = frozenset({"*", "/", "%"})
ASSIGN = frozenset({":=", "+=", "-="})
BINARY = CMP | ADD | MUL | {"||", "&&"}
LITERALS = {"STRING": "string", "DECIMAL": "decimal", "INT": "int", "DURATION": "duration"}
RENAMED = "RENAMED_FROM"


class Cursor:
    def __init__(self, tokens: Tokens, builder: Build) -> None:
        self.k = tokens.kinds
        self.v = tokens.texts
        self.offsets = tokens.offsets
        self.lines = tokens.lines
        self.columns = tokens.columns
        self.i = 0
        self.b = builder
        self.keywords = grammar().keywords
        self.terminal_of = grammar().terminal_of
        self.keyword_names: list[int] = []  # tokens spelled like keywords, read as names

    # ---- tokens and positions

    def meta(self, i0: int) -> Positions:
        """The positions of the rule whose first token is `i0` and last the one just read."""
        j = self.i - 1
        if j < i0:
            return (None, None)
        n = len(self.v[j])
        return (
            (self.lines[i0], self.columns[i0], self.offsets[i0]),
            (self.lines[j], self.columns[j] + n, self.offsets[j] + n),
        )

    def token(self, i: int, kind: str) -> Token:
        """The token for the builder of token `i`."""
        value = self.v[i]
        t: Token = _new_str(Token, value)
        line, column, start = self.lines[i], self.columns[i], self.offsets[i]
        t.type = kind
        t.start_pos = start
        t.line = line
        t.column = column
        t.end_line = line
        t.end_column = column + len(value)
        t.end_pos = start + len(value)
        return t

    def expect(self, kind: str) -> None:
        if self.k[self.i] != kind:
            raise GIVE_UP
        self.i += 1

    def accept(self, kind: str) -> bool:
        if self.k[self.i] == kind:
            self.i += 1
            return True
        return False

    def name(self) -> Token:
        i = self.i
        kind = self.k[i]
        if kind != NAME:
            if kind not in self.keywords:
                raise GIVE_UP
            self.keyword_names.append(i)  # a keyword's spelling: see `scan.reserved`
        self.i = i + 1
        return self.token(i, NAME)

    def at_name(self, offset: int = 0) -> bool:
        kind = self.k[self.i + offset]
        return kind == NAME or kind in self.keywords

    def terminal(self, kind: str) -> Token:
        """A named terminal of the kind (STRING, INT, DECIMAL, DURATION)."""
        i = self.i
        if self.k[i] != kind:
            raise GIVE_UP
        self.i = i + 1
        return self.token(i, kind)

    def kept(self) -> Token:
        """The token of a `!rule` (`payload_kind`, the operators), which lark keeps."""
        i = self.i
        self.i = i + 1
        return self.token(i, self.terminal_of[self.k[i]])

    def meta_of_name(self, i: int) -> Positions:
        n = len(self.v[i])
        line, column, start = self.lines[i], self.columns[i], self.offsets[i]
        return ((line, column, start), (line, column + n, start + n))

    def message(self) -> Any:
        j = self.i
        self.i += 1
        text = self.terminal("STRING")
        return self.b.message(self.meta(j), [text])
