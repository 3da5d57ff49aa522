"""Every `loom` block of the docs compiles as documented, so the docs never rot.

A block compiles with no diagnostic, unless an `<!-- expect: loom.a, loom.b -->` comment right above
it names the codes it must report (each at least once, and nothing else).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.lang import compile_sources

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"(?:<!-- expect: (?P<codes>[^>]*?) -->\s*)?```loom\n(?P<body>.*?)```", re.DOTALL
)


def _blocks() -> list[pytest.ParameterSet]:
    params = []
    for doc in DOCS:
        if doc.name == "diagnostics.md":
            continue  # its examples are checked against their own section's code
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("body")) + 1
            codes = {c.strip() for c in (m.group("codes") or "").split(",") if c.strip()}
            params.append(pytest.param(doc, m.group("body"), codes, id=f"{doc.name}:{line}"))
    return params


@pytest.mark.parametrize(("doc", "body", "expected"), _blocks())
def test_doc_example(doc: Path, body: str, expected: set[str]) -> None:
    result = compile_sources({f"{doc.name}.loom": body})
    got = {d.code for d in result.diagnostics}
    assert got == expected, [d.message for d in result.diagnostics]
