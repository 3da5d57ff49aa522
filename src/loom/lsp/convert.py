"""Between the compiler's values and the protocol's: spans and ranges, paths and URIs,
diagnostics."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp
from pygls.uris import from_fs_path, to_fs_path

from loom.lang.diagnostics import Diagnostic, Span

# Where each diagnostic code's section is: docs/diagnostics.md gives each one an anchor named by the
# code (`<a id="loom.unknown-name">`), so a code's page is this followed by `#` and the code. The
# checkout's own copy when Loom runs from one, else the copy a wheel carries (`loom/docs/`, written
# by setup.py): either way the page of the Loom that found the diagnostic, readable offline.
_CHECKOUT_DOCS = Path(__file__).resolve().parents[3] / "docs" / "diagnostics.md"
_PACKAGED_DOCS = Path(__file__).resolve().parents[1] / "docs" / "diagnostics.md"
DIAGNOSTICS_DOCS: str | None = next(
    (p.as_uri() for p in (_CHECKOUT_DOCS, _PACKAGED_DOCS) if p.is_file()), None
)


def path_of(uri: str) -> str:
    """The file name the compiler knows a document by: its absolute path."""
    fs = to_fs_path(uri)
    return str(Path(fs).absolute()) if fs else uri


def uri_of(path: str) -> str:
    return from_fs_path(path) or path


def to_range(span: Span) -> lsp.Range:
    # Spans are 1-based with an exclusive end column; LSP positions are 0-based. Both count
    # characters here: positions.Columns turns them into the client's units.
    return lsp.Range(
        lsp.Position(max(span.line - 1, 0), max(span.column - 1, 0)),
        lsp.Position(max(span.end_line - 1, 0), max(span.end_column - 1, 0)),
    )


def to_location(span: Span) -> lsp.Location:
    return lsp.Location(uri_of(span.file), to_range(span))


def one_based(position: lsp.Position) -> tuple[int, int]:
    return position.line + 1, position.character + 1


def offset_of(text: str, position: lsp.Position) -> int:
    """The character offset of a position in a text (clamped to the text)."""
    lines = text.splitlines(keepends=True)
    if position.line >= len(lines):
        return len(text)
    before = sum(len(line) for line in lines[: position.line])
    return before + min(position.character, len(lines[position.line].rstrip("\r\n")))


def position_at(text: str, offset: int) -> lsp.Position:
    head = text[:offset]
    line = head.count("\n")
    return lsp.Position(line, offset - (head.rfind("\n") + 1))


_SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
}


def to_diagnostic(d: Diagnostic) -> lsp.Diagnostic:
    message = d.message + (f"\nhelp: {d.help}" if d.help else "")
    return lsp.Diagnostic(
        range=to_range(d.span),
        message=message,
        severity=_SEVERITY.get(d.severity, lsp.DiagnosticSeverity.Information),
        code=d.code,
        code_description=(
            lsp.CodeDescription(href=f"{DIAGNOSTICS_DOCS}#{d.code}") if DIAGNOSTICS_DOCS else None
        ),
        source="loom",
        related_information=[
            lsp.DiagnosticRelatedInformation(to_location(span), label or "related")
            for span, label in d.secondary
        ]
        or None,
    )
