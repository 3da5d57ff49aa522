"""docs/diagnostics.md and the registry agree, every code is exercised by a data-driven case, and
each section's `loom` example reports that section's code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.lang import REGISTRY, compile_sources
from tests.lang.test_diagnostics_data import codes_expected

DOC = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"
TEXT = DOC.read_text()
SECTION = re.compile(
    r'^<a id="(loom\.[a-z-]+)"></a>\s*\n\s*\n## (loom\.[a-z-]+)\n(.*?)(?=^<a id=|\Z)',
    re.DOTALL | re.MULTILINE,
)
SECTIONS = {m.group(1): m.group(3) for m in SECTION.finditer(TEXT) if m.group(1) == m.group(2)}

# Codes no model text can trigger from a data file: they are covered by tests/lang/test_compiler.py.
NOT_DATA_DRIVEN = {"loom.file-unreadable", "loom.internal-error"}
# Findings on a change between two models (`loom migrate new`): their sections show a before and
# an after, and their data-driven cases are pairs of models; tests/migrate/test_docs.py checks them
MIGRATE = {code for code in REGISTRY if code.startswith("loom.migrate-")}


def test_every_code_has_a_section() -> None:
    assert sorted(set(REGISTRY) - set(SECTIONS)) == []


def test_every_code_mentioned_is_registered() -> None:
    mentioned = set(re.findall(r"\bloom\.[a-z]+(?:-[a-z]+)*\b", TEXT))
    mentioned -= {"loom.runtime", "loom.lang", "loom.model", "loom.db"}
    assert sorted(mentioned - set(REGISTRY)) == []


def test_every_code_has_a_data_driven_case() -> None:
    assert sorted(set(REGISTRY) - codes_expected() - NOT_DATA_DRIVEN - MIGRATE) == []


@pytest.mark.parametrize("code", sorted(set(SECTIONS) - MIGRATE))
def test_section_example_reports_its_code(code: str) -> None:
    blocks = re.findall(r"```loom\n(.*?)```", SECTIONS[code], re.DOTALL)
    if code in {"loom.file-unreadable", "loom.internal-error", "loom.nesting-too-deep"}:
        assert not blocks
        return
    assert len(blocks) == 1, f"{code}: expected one loom example"
    result = compile_sources({f"{code}.loom": blocks[0]})
    assert code in {d.code for d in result.diagnostics}, [d.message for d in result.diagnostics]
