"""Data-driven diagnostics: each model under data/diagnostics states what it must report.

An expectation is a comment on the line of the primary span: `// error: loom.code` or
`// warning: loom.code`, several separated by `;`. A folder is one multi-file model. The test
compares the set of (file, line, severity, code) reported with the set expected, so a new, stray
or missing diagnostic fails it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.lang import compile_files, render_text

DATA = Path(__file__).parent / "data" / "diagnostics"
EXPECT = re.compile(r"//\s*((?:error|warning):.*)$")
ITEM = re.compile(r"^\s*(error|warning):\s*(loom\.[a-z-]+)\s*$")


def cases() -> list[Path]:
    out = sorted(DATA.glob("*.loom")) + sorted(DATA.glob("regressions/*.loom"))
    out += sorted(p for p in DATA.iterdir() if p.is_dir() and p.name != "regressions")
    return out


def case_files(case: Path) -> list[Path]:
    return sorted(case.glob("*.loom")) if case.is_dir() else [case]


def expected_of(files: list[Path]) -> set[tuple[str, int, str, str]]:
    out = set()
    for f in files:
        for lineno, line in enumerate(f.read_text().splitlines(), start=1):
            m = EXPECT.search(line)
            if not m:
                continue
            for part in m.group(1).split(";"):
                item = ITEM.match(part)
                assert item, f"{f}:{lineno}: malformed expectation {part!r}"
                out.add((str(f), lineno, item.group(1), item.group(2)))
    return out


def codes_expected() -> set[str]:
    return {code for case in cases() for (_, _, _, code) in expected_of(case_files(case))}


@pytest.mark.parametrize("case", cases(), ids=lambda p: str(p.relative_to(DATA)))
def test_diagnostics(case: Path) -> None:
    files = case_files(case)
    result = compile_files([str(f) for f in files])
    got = {(d.span.file, d.span.line, d.severity, d.code) for d in result.diagnostics}
    want = expected_of(files)
    assert want, f"{case} states no expectation"
    assert got == want, render_text(result.diagnostics, result.sources)
