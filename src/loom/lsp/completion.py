"""Completion, best effort on text being typed: the model's last index (from the last text that
parsed) says what is declared, the text before the cursor says where the cursor is.

- after `X.`: an enum's members, an aggregate's fields (of a local whose type is known: a
  parameter `x: T`, `let x = Repo.getById(…)` / `Agg.create(…)`), an event's fields, a
  repository's finds;
- inside `emit E { … }`: the event's fields not given yet;
- anywhere else: the keywords of the place (file, context, aggregate, body) and the names in
  scope (the context's declarations and enum members, the enclosing aggregate's fields).
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lsp.convert import offset_of
from loom.lsp.index import Index, Symbol, contains, declaration_kind
from loom.lsp.symbols import symbol_kind

TOP = ("context", "deployable", "channelSource")
IN_CONTEXT = (
    "aggregate", "enum", "event", "value", "repository", "workflow", "commandHandler",
    "queryHandler", "projection", "criterion", "retrieval", "domainService", "channel",
    "resource", "timer", "command", "query", "response", "error",
)  # fmt: skip
IN_AGGREGATE = (
    "operation", "function", "derived", "invariant", "unique", "create", "private",
    "internal", "public", "extern", "immutable", "readOnly", "requires", "when",
)  # fmt: skip
IN_WORKFLOW = ("create", "on", "apply", "function", "timeout", "requires", "by")
IN_BODY = (
    "let", "var", "emit", "if", "else", "for", "in", "return", "precondition", "notFound",
    "schedule", "cancel", "complete", "true", "false",
)  # fmt: skip

_DOT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\.\s*[A-Za-z_0-9]*\Z")
_EMIT = re.compile(r"emit\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{([^{}]*)\Z")
_COMMENT_OR_STRING = re.compile(r'//[^\n]*|"(?:\\.|[^"\\\n])*"?')


def complete(
    index: Index | None, path: str, text: str, position: lsp.Position
) -> list[lsp.CompletionItem]:
    before = _COMMENT_OR_STRING.sub(
        lambda m: " " * len(m.group()), text[: offset_of(text, position)]
    )
    line, column = position.line + 1, position.character + 1
    enclosing = _enclosing(index, path, line, column) if index is not None else []
    syms = _context(index, enclosing)
    emit = _EMIT.search(before)
    if emit is not None and syms is not None:
        return _emit_fields(syms, emit.group(1), emit.group(2))
    dot = _DOT.search(before)
    if dot is not None:
        return _after_dot(index, syms, enclosing, dot.group(1), before) if syms else []
    depth = before.count("{") - before.count("}")
    return _keywords(depth, enclosing) + _names(syms, enclosing)


def _enclosing(index: Index, path: str, line: int, column: int) -> list[Symbol]:
    """The declarations around the cursor, outermost first."""
    out: list[Symbol] = []
    level = index.roots.get(path, [])
    while True:
        inner = next((s for s in level if contains(s.span, line, column)), None)
        if inner is None:
            return out
        out.append(inner)
        level = inner.children


def _context(index: Index | None, enclosing: list[Symbol]) -> ContextSymbols | None:
    if index is None or not enclosing:
        return None
    return index.program.contexts.get(enclosing[0].context)


def _item(label: str, item_kind: lsp.CompletionItemKind, detail: str) -> lsp.CompletionItem:
    return lsp.CompletionItem(label=label, kind=item_kind, detail=detail)


def _fields(fields: list[ast.Field], owner: str) -> list[lsp.CompletionItem]:
    return [_item(f.name, lsp.CompletionItemKind.Field, f"field of {owner}") for f in fields]


def _emit_fields(syms: ContextSymbols, event: str, given: str) -> list[lsp.CompletionItem]:
    ev = syms.events.get(event)
    if ev is None:
        return []
    written = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*:", given))
    return _fields([f for f in ev.fields if f.name not in written], f"event {event}")


def _after_dot(
    index: Index | None, syms: ContextSymbols, enclosing: list[Symbol], word: str, before: str
) -> list[lsp.CompletionItem]:
    if word in syms.enums:
        return [
            _item(m, lsp.CompletionItemKind.EnumMember, f"member of {word}")
            for m, _ in syms.enums[word].members
        ]
    if word in syms.repositories:
        repo = syms.repositories[word]
        return [_item("getById", lsp.CompletionItemKind.Method, f"read of {word}")] + [
            _item(f.name, lsp.CompletionItemKind.Method, f"find of {word}") for f in repo.finds
        ]
    if word in syms.aggregates:
        return [_item("create", lsp.CompletionItemKind.Method, f"factory of {word}")]
    home, type_name = _type_of_local(index, syms, word, before)
    if type_name in home.aggregates:
        agg = home.aggregates[type_name]
        members: list[lsp.CompletionItem] = [
            _item("id", lsp.CompletionItemKind.Field, f"identity of {type_name}")
        ]
        for m in agg.members:
            if isinstance(m, (ast.Field, ast.Derived)):
                members.append(_item(m.name, lsp.CompletionItemKind.Field, f"field of {agg.name}"))
            elif isinstance(m, (ast.Operation, ast.Function)):
                members.append(
                    _item(m.name, lsp.CompletionItemKind.Method, f"operation of {agg.name}")
                )
        return members
    record = home.events.get(type_name or "") or home.values.get(type_name or "")
    if record is not None:
        return _fields(record.fields, type_name or "")
    return []


def _type_of_local(
    index: Index | None, syms: ContextSymbols, word: str, before: str
) -> tuple[ContextSymbols, str | None]:
    """The type a local or parameter was declared with, read from the text above the cursor, and
    the context declaring it (`e: Orders.OrderPlaced`: another context's event)."""
    name = re.escape(word)
    typed = re.findall(rf"\b{name}\s*:\s*(?:([A-Za-z_]\w*)\s*\.\s*)?([A-Za-z_]\w*)", before)
    bound = re.findall(rf"\blet\s+{name}\s*=\s*([A-Za-z_]\w*)\s*\.\s*(\w+)", before)
    if bound:
        receiver, method = str(bound[-1][0]), str(bound[-1][1])
        if receiver in syms.repositories:
            return syms, syms.repositories[receiver].aggregate
        if receiver in syms.aggregates and method == "create":
            return syms, receiver
    if not typed:
        return syms, None
    qualifier, type_name = str(typed[-1][0]), str(typed[-1][1])
    other = index.program.contexts.get(qualifier) if index is not None and qualifier else None
    return other or syms, type_name


def _keywords(depth: int, enclosing: list[Symbol]) -> list[lsp.CompletionItem]:
    if depth <= 0:
        words: tuple[str, ...] = TOP
    elif depth == 1:
        words = IN_CONTEXT
    elif depth == 2 and enclosing and enclosing[-1].kind == "aggregate":
        words = IN_AGGREGATE
    elif depth == 2 and enclosing and enclosing[-1].kind == "workflow":
        words = IN_WORKFLOW
    else:
        words = IN_BODY
    return [_item(w, lsp.CompletionItemKind.Keyword, "keyword") for w in words]


def _names(syms: ContextSymbols | None, enclosing: list[Symbol]) -> list[lsp.CompletionItem]:
    if syms is None:
        return []
    out = [
        lsp.CompletionItem(label=d.name, kind=_item_kind(d), detail=declaration_kind(d))
        for d in syms.decls
    ]
    out += [
        _item(m, lsp.CompletionItemKind.EnumMember, f"member of {', '.join(e.name for e in es)}")
        for m, es in syms.members.items()
    ]
    agg = next((s for s in reversed(enclosing) if s.kind == "aggregate"), None)
    if agg is not None:
        out += [
            _item(c.name, lsp.CompletionItemKind.Field, f"{c.kind} of {agg.name}")
            for c in agg.children
        ]
    return out


_ITEM_KIND = {
    lsp.SymbolKind.Class: lsp.CompletionItemKind.Class,
    lsp.SymbolKind.Enum: lsp.CompletionItemKind.Enum,
    lsp.SymbolKind.Event: lsp.CompletionItemKind.Event,
    lsp.SymbolKind.Struct: lsp.CompletionItemKind.Struct,
    lsp.SymbolKind.Interface: lsp.CompletionItemKind.Interface,
    lsp.SymbolKind.Function: lsp.CompletionItemKind.Function,
}


def _item_kind(d: ast.Decl) -> lsp.CompletionItemKind:
    return _ITEM_KIND.get(symbol_kind(declaration_kind(d)), lsp.CompletionItemKind.Reference)
