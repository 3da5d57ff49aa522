"""Quick fixes for the commonest diagnostics, each an edit of the text the diagnostic points at:

- `loom.emit-fields` (an emit leaves fields out): add them, each given the value of the same
  name (`total: total`), which is what an emit most often passes; the checker says if none is;
- `loom.operation-bypasses-workflow`: declare the operation `internal` (no route);
- `loom.unrounded-division`: wrap the value in `round(…, S)`, S the declared scale.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs
from lsprotocol import types as lsp

from loom.lsp.convert import offset_of, position_at
from loom.lsp.models import Model

_MISSING = re.compile(r"leaves out (.*)\Z", re.M)
_SCALE = re.compile(r"`decimal\((\d+), (\d+)\)`")


def quick_fixes(
    model: Model,
    path: str,
    text: str,
    params: lsp.CodeActionParams,
    chars: Callable[[str, lsp.Range], lsp.Range],
) -> list[lsp.CodeAction]:
    """`chars`: a client's range in characters (its diagnostics come back in its units)."""
    out: list[lsp.CodeAction] = []
    uri = params.text_document.uri
    for d in params.context.diagnostics:
        edit: lsp.TextEdit | None = None
        title = ""
        here = attrs.evolve(d, range=chars(uri, d.range))
        if d.code == "loom.emit-fields":
            edit, title = _add_emit_fields(text, here)
        elif d.code == "loom.operation-bypasses-workflow":
            edit, title = _make_internal(text, here)
        elif d.code == "loom.unrounded-division":
            edit, title = _round(text, here)
        if edit is not None:
            out.append(
                lsp.CodeAction(
                    title=title,
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[d],
                    is_preferred=True,
                    edit=lsp.WorkspaceEdit(changes={params.text_document.uri: [edit]}),
                )
            )
    return out


def _add_emit_fields(text: str, d: lsp.Diagnostic) -> tuple[lsp.TextEdit | None, str]:
    found = _MISSING.search(d.message.split("\n", 1)[0])
    names = re.findall(r"`([A-Za-z_]\w*)`", found.group(1)) if found else []
    opening = text.find("{", offset_of(text, d.range.end))
    closing = _matching(text, opening) if opening >= 0 else -1
    if not names or closing < 0:
        return None, ""
    added = ", ".join(f"{n}: {n}" for n in names)
    given = text[opening + 1 : closing].rstrip()
    if given.strip():
        # `emit E { a: 1 }` -> `emit E { a: 1, b: b }`: after the last field given
        at = opening + 1 + len(given)
        start = end = position_at(text, at)
        new = ("" if given.endswith(",") else ",") + f" {added}"
    else:  # `emit E {}` -> `emit E { b: b }`
        start, end = position_at(text, opening + 1), position_at(text, closing)
        new = f" {added} "
    title = f"Add the missing field{'s' if len(names) > 1 else ''}: {', '.join(names)}"
    return lsp.TextEdit(lsp.Range(start, end), new), title


def _matching(text: str, opening: int) -> int:
    depth = 0
    for i in range(opening, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _make_internal(text: str, d: lsp.Diagnostic) -> tuple[lsp.TextEdit | None, str]:
    name_at = offset_of(text, d.range.start)
    keyword = text.rfind("operation", 0, name_at)
    if keyword < 0 or text[keyword:name_at].strip() != "operation":
        return None, ""
    pos = position_at(text, keyword)
    return lsp.TextEdit(lsp.Range(pos, pos), "internal "), "Declare the operation `internal`"


def _round(text: str, d: lsp.Diagnostic) -> tuple[lsp.TextEdit | None, str]:
    found = _SCALE.search(d.message)
    if found is None:
        return None, ""
    scale = found.group(2)
    value = text[offset_of(text, d.range.start) : offset_of(text, d.range.end)]
    return lsp.TextEdit(d.range, f"round({value}, {scale})"), f"Round to {scale} places"
