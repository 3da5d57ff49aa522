"""`loom.migrate-enum-member-in-use`, data-driven: each folder under enums_data/ holds a model
before and after a change of its enums, with `// error: loom.migrate-enum-member-in-use` on the
line of each field whose rows would hold a removed member, or `// migrate: none` first in
`after.loom` when no member is removed (a renamed one is rewritten). Every removed member is taken
to be held by a stored row (the database's count is tests/migrate/test_enum_members.py); the docs
section's two examples are checked the same way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.migrate.diff import diff
from loom.migrate.enums import CODE, Stored, enum_findings
from loom.migrate.steps import RetireEnum
from tests.lang.test_docs_diagnostics import SECTIONS
from tests.migrate.test_lint_data import _snapshot, expected_of

DATA = Path(__file__).parent / "enums_data"


def _found(before: Path, after: Path, out: Path) -> set[tuple[str, int, str, str]]:
    steps = diff(_snapshot(before, out / "before"), _snapshot(after, out / "after"))
    held: Stored = {
        (s.table, s.column["name"]): dict.fromkeys(s.removed, 1)
        for s in steps
        if isinstance(s, RetireEnum)
    }
    found = enum_findings(steps, held, fallback_file="?")
    return {
        (Path(f.diagnostic.span.file).stem, f.diagnostic.span.line, "error", f.diagnostic.code)
        for f in found
    }


@pytest.mark.parametrize("case", sorted(p for p in DATA.iterdir() if p.is_dir()), ids=str)
def test_case(case: Path, tmp_path: Path) -> None:
    found = _found(case / "before.loom", case / "after.loom", tmp_path)
    assert found == expected_of(case)


def test_docs_section_examples(tmp_path: Path) -> None:
    blocks = re.findall(r"```loom\n(.*?)```", SECTIONS[CODE], re.DOTALL)
    assert len(blocks) == 2, f"{CODE}: expected a before and an after"
    before, after = tmp_path / "before.loom", tmp_path / "after.loom"
    before.write_text(blocks[0], encoding="utf-8")
    after.write_text(blocks[1], encoding="utf-8")
    assert {code for *_, code in _found(before, after, tmp_path)} == {CODE}
