"""Diagnostics as text (rustc/ruff style, for people), JSON (for tools and editors) or SARIF 2.1.0
(`render_sarif`, for code-scanning tools: one run, its driver `loom` with one rule per code
reported, one result per diagnostic with its secondary spans as related locations; columns counted
in characters, `columnKind: unicodeCodePoints`, `endColumn` exclusive as SARIF's is)."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

import loom
from loom.lang.codes import REGISTRY
from loom.lang.diagnostics import Diagnostic, Span

_RED, _YELLOW, _BLUE, _BOLD, _RESET = "\x1b[31m", "\x1b[33m", "\x1b[34m", "\x1b[1m", "\x1b[0m"


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color and text else text


@functools.lru_cache(maxsize=64)
def _lines(text: str) -> tuple[str, ...]:
    """The lines of a source, split once per text: every label of every diagnostic quotes a line,
    and splitting the whole file for each made rendering quadratic in a large file (a context of
    3,000 aggregates in one file: 6 s of its warnings). Keyed by the text itself, whose hash the
    string keeps, so a look-up of the same source is constant time; the bound keeps a long-lived
    process from holding on to old sources."""
    return tuple(text.split("\n"))


def _line_of(sources: Mapping[str, str], span: Span) -> str | None:
    text = sources.get(span.file)
    if text is None:
        return None
    lines = _lines(text)
    if 1 <= span.line <= len(lines):
        return lines[span.line - 1].rstrip("\r")
    return None


def _underline(span: Span, line: str, char: str) -> tuple[int, int]:
    """Start column (0-based) and width of the marker under `line` for `span`.

    A span running onto later lines is underlined to the end of its first line: one source line per
    label keeps the output short, and the first line is where the construct starts.
    """
    start = max(0, span.column - 1)
    if span.end_line == span.line:
        end = max(span.end_column - 1, start + 1)
    else:
        end = max(len(line), start + 1)
    return start, max(1, end - start)


def _snippet(
    out: list[str],
    sources: Mapping[str, str],
    span: Span,
    label: str,
    char: str,
    gutter: int,
    color: bool,
    paint: str,
) -> None:
    line = _line_of(sources, span)
    if line is None:
        return
    num = str(span.line).rjust(gutter)
    bar = _paint("|", _BLUE, color)
    out.append(f"{_paint(num, _BLUE, color)} {bar} {line}")
    start, width = _underline(span, line, char)
    # Tabs before the marker keep the marker aligned with the text above it.
    pad = "".join("\t" if c == "\t" else " " for c in line[:start])
    marker = _paint(char * width + (f" {label}" if label else ""), paint, color)
    out.append(f"{' ' * gutter} {bar} {pad}{marker}")


def render_one(d: Diagnostic, sources: Mapping[str, str], *, color: bool = False) -> str:
    sev_paint = _RED if d.severity == "error" else _YELLOW
    s = d.span
    head = (
        f"{s.file}:{s.line}:{s.column}: "
        f"{_paint(f'{d.severity}[{d.code}]', _BOLD + sev_paint, color)}: {d.message}"
    )
    out = [head]
    spans = [s] + [sp for sp, _ in d.secondary if sp.file == s.file]
    gutter = max(len(str(sp.line)) for sp in spans)
    bar = " " * gutter + " " + _paint("|", _BLUE, color)
    if _line_of(sources, s) is not None:
        out.append(bar)
        _snippet(out, sources, s, d.label, "^", gutter, color, sev_paint)
    for sp, label in d.secondary:
        if _line_of(sources, sp) is None:
            continue
        if sp.file != s.file:
            # Another file: name it, the way rustc does, before quoting its line.
            where = f"{sp.file}:{sp.line}:{sp.column}"
            out.append(f"{' ' * gutter}{_paint(':::', _BLUE, color)} {where}")
        out.append(bar)
        _snippet(out, sources, sp, label, "-", gutter, color, _BLUE)
    if d.help:
        out.append(f"{' ' * gutter} = {_paint('help', _BOLD, color)}: {d.help}")
    return "\n".join(out)


def summary(diagnostics: Sequence[Diagnostic]) -> str:
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = len(diagnostics) - errors
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    return ", ".join(parts) if parts else "no problems"


def render_text(
    diagnostics: Sequence[Diagnostic], sources: Mapping[str, str], color: bool = False
) -> str:
    """Every diagnostic with its source context, then a summary line; "" when there is nothing."""
    if not diagnostics:
        return ""
    blocks = [render_one(d, sources, color=color) for d in diagnostics]
    return "\n\n".join(blocks) + "\n\n" + summary(diagnostics)


def to_dict(d: Diagnostic) -> dict[str, object]:
    info = REGISTRY.get(d.code)
    labels = [
        {
            "file": d.span.file,
            "line": d.span.line,
            "column": d.span.column,
            "end_line": d.span.end_line,
            "end_column": d.span.end_column,
            "message": d.label,
            "primary": True,
        }
    ]
    for sp, label in d.secondary:
        labels.append(
            {
                "file": sp.file,
                "line": sp.line,
                "column": sp.column,
                "end_line": sp.end_line,
                "end_column": sp.end_column,
                "message": label,
                "primary": False,
            }
        )
    return {
        "code": d.code,
        "severity": d.severity,
        "message": d.message,
        "file": d.span.file,
        "line": d.span.line,
        "column": d.span.column,
        "end_line": d.span.end_line,
        "end_column": d.span.end_column,
        "labels": labels,
        "help": d.help,
        "docs": info.anchor if info else None,
    }


def render_json(diagnostics: Sequence[Diagnostic]) -> str:
    """A JSON array, one object per diagnostic (columns 1-based, `end_column` exclusive)."""
    return json.dumps([to_dict(d) for d in diagnostics], indent=2, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------
# SARIF 2.1.0

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


def _uri(file: str) -> str:
    """A file as a URI reference: absolute paths as `file:` URIs, relative ones as given."""
    path = Path(file)
    if path.is_absolute():
        return path.as_uri()
    return quote(path.as_posix(), safe="/")


def _location(span: Span) -> dict[str, object]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(span.file)},
            "region": {
                "startLine": span.line,
                "startColumn": span.column,
                "endLine": span.end_line,
                "endColumn": _end_column(span),
            },
        }
    }


def _end_column(span: Span) -> int:
    """SARIF's end column, past the start column on a one-line span (a region is never empty)."""
    if span.end_line == span.line:
        return max(span.end_column, span.column + 1)
    return max(span.end_column, 1)


def _rule(code: str) -> dict[str, object]:
    info = REGISTRY.get(code)
    summary = info.summary if info else code
    return {
        "id": code,
        "shortDescription": {"text": summary},
        "help": {"text": f"{summary}: see docs/diagnostics.md#{code}"},
        "defaultConfiguration": {"level": info.severity if info else "error"},
    }


def render_sarif(diagnostics: Sequence[Diagnostic]) -> str:
    """A SARIF 2.1.0 log of the diagnostics, as JSON text."""
    codes = sorted({d.code for d in diagnostics})
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for d in diagnostics:
        text = d.message + (f"\nhelp: {d.help}" if d.help else "")
        result: dict[str, object] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": d.severity,
            "message": {"text": text},
            "locations": [_location(d.span)],
        }
        related = []
        for i, (span, label) in enumerate(d.secondary, start=1):
            where = _location(span)
            where["id"] = i
            if label:
                where["message"] = {"text": label}
            related.append(where)
        if related:
            result["relatedLocations"] = related
        results.append(result)
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "loom",
                        "version": loom.__version__,
                        "rules": [_rule(code) for code in codes],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
