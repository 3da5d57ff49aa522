"""Data-driven lint cases: each folder under data/ holds a model before and after a change, and
states what `loom migrate new` must report for it the way tests/lang's cases do: a comment on the
line of each finding's primary span, `// warning: loom.migrate-x; error: loom.migrate-y` — in
`after.loom` for what the new model has, in `before.loom` for what it no longer has (the finding
is placed in the model as of the last migration). `// migrate: none` first in `after.loom` says
the change is clean. The set of (file, line, severity, code) reported must be the set stated."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.build.package import build_model, import_package
from loom.lang import compile_files, render_text
from loom.migrate.model import locator, service_metadata
from loom.migrate.plan import make_plan
from loom.migrate.snapshot import Snapshot
from loom.migrate.tables import snapshot_of

DATA = Path(__file__).parent / "data"
EXPECT = re.compile(r"//\s*((?:error|warning):.*)$")
ITEM = re.compile(r"^\s*(error|warning):\s*(loom\.migrate-[a-z-]+)\s*$")
NONE = "// migrate: none"

Expected = set[tuple[str, int, str, str]]


def cases() -> list[Path]:
    return sorted(p for p in DATA.iterdir() if p.is_dir())


def expected_of(case: Path) -> Expected:
    out: Expected = set()
    for name in ("before", "after"):
        text = (case / f"{name}.loom").read_text(encoding="utf-8")
        for lineno, line in enumerate(text.splitlines(), start=1):
            m = EXPECT.search(line)
            if not m:
                continue
            for part in m.group(1).split(";"):
                item = ITEM.match(part)
                assert item, f"{case}/{name}.loom:{lineno}: malformed expectation {part!r}"
                out.add((name, lineno, item.group(1), item.group(2)))
    clean = (case / "after.loom").read_text(encoding="utf-8").startswith(NONE)
    assert bool(out) != clean, f"{case}: state the findings, or `{NONE}` alone"
    return out


def codes_expected() -> set[str]:
    return {code for case in cases() for *_, code in expected_of(case)}


def _snapshot(model: Path, out: Path) -> Snapshot:
    result = compile_files([str(model)])
    assert result.ok and result.model is not None, render_text(result.diagnostics, result.sources)
    build_model(result.model, out)
    return snapshot_of(service_metadata(import_package(out)), locator(result.model))


def _which(file: str) -> str:
    name = Path(file).name
    return "before" if name.startswith("before.loom") else "after" if name == "after.loom" else file


@pytest.mark.parametrize("case", cases(), ids=lambda p: p.name)
def test_lint(case: Path, tmp_path: Path) -> None:
    before = _snapshot(case / "before.loom", tmp_path / "before")
    after = _snapshot(case / "after.loom", tmp_path / "after")
    plan = make_plan(before, after, fallback_file="?")
    assert plan.steps, "the case changes nothing"
    got = {
        (_which(d.span.file), d.span.line, d.severity, d.code)
        for d in (f.diagnostic for f in plan.findings)
    }
    assert got == expected_of(case), plan.render({})
