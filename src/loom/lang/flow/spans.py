"""Spans for the flow checks: the IR keeps where each declaration and statement starts (`Origin`),
and a diagnostic underlines the word there, or an enum's member."""

from __future__ import annotations

import re
from collections.abc import Mapping

from loom.lang.diagnostics import Span
from loom.model import ir

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Spans:
    """Spans in the model's sources, each file split into lines once."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self._sources = sources
        self._lines: dict[str, list[str]] = {}

    def _line(self, file: str, line: int) -> str:
        lines = self._lines.get(file)
        if lines is None:
            lines = self._lines[file] = self._sources.get(file, "").split("\n")
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def at(self, origin: ir.Origin) -> Span:
        """The word the origin points at (a declaration's keyword or name, a statement's keyword)."""
        word = _WORD.match(self._line(origin.file, origin.line), origin.column - 1)
        end = word.end() + 1 if word else origin.column + 1
        return Span(origin.file, origin.line, origin.column, origin.line, end)

    def word(self, origin: ir.Origin, name: str) -> Span:
        """The first whole word `name` from the origin on (on its line or the next few): the name
        of a declaration whose origin is its keyword, the event a reaction takes."""
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        column = origin.column - 1
        for line in range(origin.line, origin.line + 5):
            m = pattern.search(self._line(origin.file, line), column)
            if m is not None:
                return Span(origin.file, line, m.start() + 1, line, m.end() + 1)
            column = 0
        return self.at(origin)

    def member(self, origin: ir.Origin, name: str) -> Span:
        """The member `name` of the enum declared at `origin`: its first whole word after the
        enum's `{`."""
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        column, opened = origin.column - 1, False
        for line in range(origin.line, origin.line + 1000):
            text = self._line(origin.file, line)
            if not opened:
                brace = text.find("{", column)
                if brace < 0:
                    column = 0
                    continue
                opened, column = True, brace
            m = pattern.search(text, column)
            if m is not None:
                return Span(origin.file, line, m.start() + 1, line, m.end() + 1)
            column = 0
        return self.at(origin)
