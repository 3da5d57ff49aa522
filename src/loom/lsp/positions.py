"""Columns between the compiler and the client. The compiler counts characters (code points);
a client counts in the encoding agreed at `initialize` (UTF-16 by default, UTF-8 or UTF-32 when
it prefers one). They differ only on a line with a character outside ASCII before the column, so
the handlers work in characters and this module converts at the edge: a request's position on
the way in, every range of an answer or a publication on the way out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs
from lsprotocol import types as lsp

from loom.lsp.convert import path_of

_T = TypeVar("_T")


def _units(text: str, encoding: str) -> int:
    if encoding == lsp.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8"))
    return len(text.encode("utf-16-le")) // 2


class Columns:
    def __init__(self, encoding: str, text_of: Callable[[str], str]) -> None:
        self.encoding = encoding
        self.text_of = text_of  # a file's text, by its path

    def _line(self, uri: str, line: int) -> str:
        lines = self.text_of(path_of(uri)).splitlines()
        return lines[line] if 0 <= line < len(lines) else ""

    def incoming(self, uri: str, position: lsp.Position) -> lsp.Position:
        """A client's position, in characters."""
        if self.encoding == lsp.PositionEncodingKind.Utf32:
            return position
        text = self._line(uri, position.line)
        if text.isascii():
            return position
        count = 0
        for i, ch in enumerate(text):
            if count >= position.character:
                return lsp.Position(line=position.line, character=i)
            count += _units(ch, self.encoding)
        return lsp.Position(line=position.line, character=len(text))

    def _out(self, uri: str, position: lsp.Position) -> lsp.Position:
        text = self._line(uri, position.line)
        if text.isascii():
            return position
        return lsp.Position(
            line=position.line, character=_units(text[: position.character], self.encoding)
        )

    def _range(self, uri: str, r: lsp.Range) -> lsp.Range:
        return lsp.Range(start=self._out(uri, r.start), end=self._out(uri, r.end))

    def incoming_range(self, uri: str, r: lsp.Range) -> lsp.Range:
        return lsp.Range(start=self.incoming(uri, r.start), end=self.incoming(uri, r.end))

    def outgoing(self, value: _T, uri: str) -> _T:
        """An answer with its ranges in the client's units; a range belongs to the file of the
        location or edit holding it, else to `uri` (the document asked about)."""
        if self.encoding == lsp.PositionEncodingKind.Utf32:
            return value
        moved: object = value
        if isinstance(value, list):
            moved = [self.outgoing(v, uri) for v in value]
        elif isinstance(value, lsp.Range):
            moved = self._range(uri, value)
        elif isinstance(value, lsp.Location):
            moved = self._location(value)
        elif isinstance(value, lsp.TextEdit):
            moved = attrs.evolve(value, range=self._range(uri, value.range))
        elif isinstance(value, lsp.WorkspaceEdit):
            moved = self._edits(value)
        elif isinstance(value, lsp.Diagnostic):
            moved = attrs.evolve(
                value,
                range=self._range(uri, value.range),
                related_information=[
                    attrs.evolve(info, location=self._location(info.location))
                    for info in value.related_information
                ]
                if value.related_information
                else None,
            )
        elif isinstance(value, lsp.DocumentSymbol):
            moved = self._symbol(value, uri)
        elif isinstance(value, lsp.WorkspaceSymbol) and isinstance(value.location, lsp.Location):
            moved = attrs.evolve(value, location=self._location(value.location))
        elif isinstance(value, lsp.CodeAction) and value.edit is not None:
            # its diagnostics are the client's own, in its units already: only the edit moves
            moved = attrs.evolve(value, edit=self._edits(value.edit))
        return moved  # type: ignore[return-value]  # of the type it was given

    def _location(self, loc: lsp.Location) -> lsp.Location:
        return lsp.Location(uri=loc.uri, range=self._range(loc.uri, loc.range))

    def _edits(self, edit: lsp.WorkspaceEdit) -> lsp.WorkspaceEdit:
        if edit.changes is None:
            return edit
        return lsp.WorkspaceEdit(
            changes={
                uri: [
                    lsp.TextEdit(range=self._range(uri, e.range), new_text=e.new_text)
                    for e in edits
                ]
                for uri, edits in edit.changes.items()
            }
        )

    def _symbol(self, sym: lsp.DocumentSymbol, uri: str) -> lsp.DocumentSymbol:
        return attrs.evolve(
            sym,
            range=self._range(uri, sym.range),
            selection_range=self._range(uri, sym.selection_range),
            children=[self._symbol(c, uri) for c in sym.children] if sym.children else None,
        )
