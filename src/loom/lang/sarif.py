"""Diagnostics as SARIF 2.1.0 (`loom check --format sarif`), the format code-scanning tools read.

One run, its driver `loom` with one rule per code reported (its summary and the page that explains
it), one result per diagnostic: its level, message (the help after it), primary location, and its
secondary spans as related locations. Columns are counted in characters, as in the text output
(`columnKind: unicodeCodePoints`), `endColumn` exclusive as SARIF's is.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import loom
from loom.lang.codes import REGISTRY
from loom.lang.diagnostics import Diagnostic, Span

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
