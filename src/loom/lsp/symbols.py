"""Symbols: a file's outline, the workspace's symbols, and rename across a model's files.

A rename of what the database or the event store keeps under its name (an aggregate, an enum's
members, an event, the fields of these and of workflows' state and projections) also writes `renamed from OLD` on the declaration, as docs/migrations.md
asks, so the next `loom migrate new` moves the data instead of dropping it.
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lsp.convert import one_based, position_at, to_location, to_range, uri_of
from loom.lsp.index import Index, Symbol, contains

_KIND = {
    "context": lsp.SymbolKind.Namespace,
    "aggregate": lsp.SymbolKind.Class,
    "value object": lsp.SymbolKind.Struct,
    "payload": lsp.SymbolKind.Struct,
    "enum": lsp.SymbolKind.Enum,
    "enum member": lsp.SymbolKind.EnumMember,
    "event": lsp.SymbolKind.Event,
    "field": lsp.SymbolKind.Field,
    "derived": lsp.SymbolKind.Property,
    "operation": lsp.SymbolKind.Method,
    "function": lsp.SymbolKind.Function,
    "method": lsp.SymbolKind.Method,
    "find": lsp.SymbolKind.Method,
    "repository": lsp.SymbolKind.Interface,
    "workflow": lsp.SymbolKind.Class,
    "handler": lsp.SymbolKind.Function,
    "projection": lsp.SymbolKind.Class,
    "channel": lsp.SymbolKind.Interface,
    "criterion": lsp.SymbolKind.Function,
    "retrieval": lsp.SymbolKind.Function,
    "domain service": lsp.SymbolKind.Class,
    "resource": lsp.SymbolKind.Interface,
    "timer": lsp.SymbolKind.Function,
    "timeout": lsp.SymbolKind.Function,
    "deployable": lsp.SymbolKind.Module,
    "channel source": lsp.SymbolKind.Module,
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def kind(sym: Symbol) -> lsp.SymbolKind:
    return symbol_kind(sym.kind)


def symbol_kind(name: str) -> lsp.SymbolKind:
    return _KIND.get(name, lsp.SymbolKind.Object)


def outline(index: Index, path: str) -> list[lsp.DocumentSymbol]:
    return [_document_symbol(s) for s in index.roots.get(path, [])]


def _document_symbol(sym: Symbol) -> lsp.DocumentSymbol:
    whole = sym.span if contains(sym.span, sym.name_span.line, sym.name_span.column) else None
    return lsp.DocumentSymbol(
        name=sym.name,
        kind=kind(sym),
        detail=sym.kind,
        range=to_range(whole or sym.name_span),
        selection_range=to_range(sym.name_span),
        children=[_document_symbol(c) for c in sym.children] or None,
    )


def workspace(indexes: list[Index], query: str) -> list[lsp.WorkspaceSymbol]:
    """The declarations whose name holds the query's letters in order (as editors filter)."""
    q = query.lower()
    out: list[lsp.WorkspaceSymbol] = []
    seen: set[Span] = set()
    for index in indexes:
        for sym in index.all_symbols():
            if sym.name_span in seen or not _fuzzy(q, sym.name.lower()):
                continue
            seen.add(sym.name_span)
            out.append(
                lsp.WorkspaceSymbol(
                    name=sym.name,
                    kind=kind(sym),
                    location=to_location(sym.name_span),
                    container_name=sym.container or None,
                )
            )
    return out


def _fuzzy(query: str, name: str) -> bool:
    rest = iter(name)
    return all(ch in rest for ch in query)


def rename_range(index: Index, sym: Symbol, path: str, position: lsp.Position) -> lsp.Range | None:
    line, column = one_based(position)
    for span in index.uses(sym):
        if span.file == path and contains(span, line, column):
            return to_range(span)
    return None


def is_name(text: str) -> bool:
    return bool(_NAME.match(text))


def rename(index: Index, sym: Symbol, new_name: str) -> lsp.WorkspaceEdit:
    edits: dict[str, list[lsp.TextEdit]] = {}
    for span in index.uses(sym):
        edits.setdefault(uri_of(span.file), []).append(lsp.TextEdit(to_range(span), new_name))
    kept = _keep_data(sym, index.sources)
    if kept is not None:
        file, offset = kept
        at = position_at(index.sources[file], offset)
        edits.setdefault(uri_of(file), []).append(
            lsp.TextEdit(lsp.Range(at, at), f" renamed from {sym.name}")
        )
    return lsp.WorkspaceEdit(changes=edits)


_TERMINAL = re.compile(r"\s*terminal(?![A-Za-z0-9_])")
_MODIFIERS = re.compile(r"(\s*(?:immutable|readOnly)(?![A-Za-z0-9_]))*")


def _keep_data(sym: Symbol, sources: dict[str, str]) -> tuple[str, int] | None:
    """Where `renamed from OLD` goes for a rename that must keep the data (None: it need not,
    or the declaration says it already)."""
    node = sym.node
    if isinstance(node, (ast.Aggregate, ast.Event)) and sym.kind in ("aggregate", "event"):
        return None if node.renamed_from else (sym.name_span.file, sym.name_span.end)
    if isinstance(node, ast.Enum) and sym.kind == "enum member":
        # stored as its name in the columns of the enum: `Shut terminal renamed from Closed`
        at = next(i for i, (_, span) in enumerate(node.members) if span == sym.name_span)
        if at in node.renamed_from:
            return None
        file = sym.name_span.file
        found = _TERMINAL.match(sources[file], sym.name_span.end)
        return file, found.end() if found else sym.name_span.end
    if isinstance(node, ast.Field) and sym.kind == "field" and _persisted(sym):
        if node.renamed_from is not None:
            return None
        # `name: T [immutable] [readOnly] renamed from OLD [= default]`
        file = sym.name_span.file
        end = node.type.span.end
        found = _MODIFIERS.match(sources[file], end)
        return file, found.end() if found else end
    return None


def _persisted(sym: Symbol) -> bool:
    """A field kept under its name: a column of an aggregate's, a workflow instance's or a
    projection's table, or a field of stored events (not a value object's: it is stored inside
    the fields that hold it, under theirs)."""
    return sym.parent is not None and sym.parent.kind in (
        "aggregate", "event", "workflow", "projection",
    )  # fmt: skip
