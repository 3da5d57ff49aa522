"""Data-driven lint cases: each folder under data/ holds a model before and after a change; the
first line of `after.loom` states what `loom migrate new` must report for it,
`// migrate: warning: loom.migrate-x; error: loom.migrate-y` (or `none`). The test compares the
set of (severity, code) reported with the set stated, so a new, stray or missing finding fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.build import build_model, import_package
from loom.lang import compile_files, render_text
from loom.migrate.model import locator, service_metadata
from loom.migrate.plan import make_plan
from loom.migrate.snapshot import Snapshot, snapshot_of

DATA = Path(__file__).parent / "data"
EXPECT = re.compile(r"^//\s*migrate:\s*(.*)$")
ITEM = re.compile(r"^\s*(error|warning):\s*(loom\.migrate-[a-z-]+)\s*$")


def cases() -> list[Path]:
    return sorted(p for p in DATA.iterdir() if p.is_dir())


def expected_of(case: Path) -> set[tuple[str, str]]:
    first = (case / "after.loom").read_text(encoding="utf-8").splitlines()[0]
    m = EXPECT.match(first)
    assert m, f"{case}/after.loom: the first line states no expectation"
    if m.group(1).strip() == "none":
        return set()
    out = set()
    for part in m.group(1).split(";"):
        item = ITEM.match(part)
        assert item, f"{case}: malformed expectation {part!r}"
        out.add((item.group(1), item.group(2)))
    return out


def codes_expected() -> set[str]:
    return {code for case in cases() for _, code in expected_of(case)}


def _snapshot(model: Path, out: Path) -> Snapshot:
    result = compile_files([str(model)])
    assert result.ok and result.model is not None, render_text(result.diagnostics, result.sources)
    build_model(result.model, out)
    return snapshot_of(service_metadata(import_package(out)), locator(result.model))


@pytest.mark.parametrize("case", cases(), ids=lambda p: p.name)
def test_lint(case: Path, tmp_path: Path) -> None:
    before = _snapshot(case / "before.loom", tmp_path / "before")
    after = _snapshot(case / "after.loom", tmp_path / "after")
    plan = make_plan(before, after, fallback_file=str(case / "after.loom"))
    got = {(f.diagnostic.severity, f.diagnostic.code) for f in plan.findings}
    assert plan.steps, "the case changes nothing"
    assert got == expected_of(case), plan.render({})
