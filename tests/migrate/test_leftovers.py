"""`loom.leftover-rename` (issue 11 §2): data-driven cases under leftovers_data/, each a model as
of the last migration (`before.loom`, whose snapshot is written as `migrations/0001_*.json`) and
the model now (`after.loom`), with `// warning: loom.leftover-rename` on each line the warning must
be on (`// leftovers: none` first when there is none); the docs section's two examples; and
`loom check` printing it (and exiting 0) through the CLI."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom.cli.main import app
from loom.lang import compile_files, render_text
from loom.migrate.leftovers import leftover_renames
from loom.migrate.snapshot import dumps
from tests.lang.test_docs_diagnostics import SECTIONS
from tests.migrate.test_lint_data import _snapshot

DATA = Path(__file__).parent / "leftovers_data"
EXPECT = re.compile(r"//\s*warning:\s*(loom\.[a-z-]+)\s*$")
NONE = "// leftovers: none"


def _migrated(before: Path, after_text: str, tmp: Path) -> Path:
    """A model folder: `after_text` as model.loom, with one migration whose snapshot is that of
    the model `before`."""
    folder = tmp / "model"
    (folder / "migrations").mkdir(parents=True)
    snapshot = _snapshot(before, tmp / "build")
    (folder / "migrations" / "0001_initial_schema.json").write_text(dumps(snapshot))
    (folder / "migrations" / "0001_initial_schema.py").write_text('"""the plan"""\n')
    model = folder / "model.loom"
    model.write_text(after_text, encoding="utf-8")
    return model


def _leftovers(model: Path) -> list[tuple[int, str]]:
    result = compile_files([str(model)])
    assert result.ok and result.model is not None, render_text(result.diagnostics, result.sources)
    found = leftover_renames(result.model, model, result.sources)
    return [(d.span.line, d.code) for d in found]


@pytest.mark.parametrize("case", sorted(p for p in DATA.iterdir() if p.is_dir()), ids=str)
def test_case(case: Path, tmp_path: Path) -> None:
    text = (case / "after.loom").read_text(encoding="utf-8")
    expected = [
        (n, m.group(1))
        for n, line in enumerate(text.splitlines(), start=1)
        if (m := EXPECT.search(line))
    ]
    assert bool(expected) != text.startswith(NONE), f"{case}: state the warnings, or {NONE}"
    assert _leftovers(_migrated(case / "before.loom", text, tmp_path)) == expected


def test_the_span_is_the_clause(tmp_path: Path) -> None:
    case = DATA / "applied"
    model = _migrated(case / "before.loom", (case / "after.loom").read_text(), tmp_path)
    result = compile_files([str(model)])
    assert result.model is not None
    found = leftover_renames(result.model, model, result.sources)
    lines = result.sources[str(model)].splitlines()
    for d in found:
        assert d.span.line == d.span.end_line
        quoted = lines[d.span.line - 1][d.span.column - 1 : d.span.end_column - 1]
        assert quoted.startswith("renamed from "), quoted
        assert d.severity == "warning"
        assert d.help is not None and d.help.startswith("remove `renamed from")


def test_without_migrations_nothing(tmp_path: Path) -> None:
    model = tmp_path / "model.loom"
    shutil.copy(DATA / "applied" / "after.loom", model)
    assert _leftovers(model) == []


def test_docs_section_examples(tmp_path: Path) -> None:
    blocks = re.findall(r"```loom\n(.*?)```", SECTIONS["loom.leftover-rename"], re.DOTALL)
    assert len(blocks) == 2, "expected the model as of the last migration, and the model now"
    before = tmp_path / "before.loom"
    before.write_text(blocks[0], encoding="utf-8")
    model = _migrated(before, blocks[1], tmp_path)
    assert [code for _, code in _leftovers(model)] == ["loom.leftover-rename"]


def test_loom_check_prints_it_and_succeeds(tmp_path: Path) -> None:
    case = DATA / "applied"
    model = _migrated(case / "before.loom", (case / "after.loom").read_text(), tmp_path)
    got = CliRunner().invoke(app, ["check", "--color", "never", str(model)])
    assert got.exit_code == 0, got.output
    assert got.output.count("warning[loom.leftover-rename]") == 5, got.output
    assert "remove `renamed from name`" in got.output
