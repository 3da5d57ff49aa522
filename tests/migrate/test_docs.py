"""docs/diagnostics.md's migration findings: each `loom.migrate-*` code has a section whose two
`loom` examples (the model before and after a change) report it, and a data-driven case."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.lang import REGISTRY
from loom.migrate.plan import make_plan
from tests.lang.test_docs_diagnostics import SECTIONS
from tests.migrate.test_lint_data import _snapshot, codes_expected

# `loom.migrate-pending-events` is about stored events, not the schema: its data-driven cases and
# its section's examples are checked by tests/migrate/test_events_data.py; the stored enum values
# of `loom.migrate-enum-member-in-use` by tests/migrate/test_enums_data.py
STORED = {"loom.migrate-pending-events", "loom.migrate-enum-member-in-use"}
MIGRATE = sorted(
    code for code in REGISTRY if code.startswith("loom.migrate-") and code not in STORED
)


def test_every_migrate_code_has_a_data_driven_case() -> None:
    assert sorted(set(MIGRATE) - codes_expected()) == []


@pytest.mark.parametrize("code", MIGRATE)
def test_section_examples_report_the_code(code: str, tmp_path: Path) -> None:
    blocks = re.findall(r"```loom\n(.*?)```", SECTIONS[code], re.DOTALL)
    assert len(blocks) == 2, f"{code}: expected a before and an after"
    snapshots = []
    for name, text in zip(("before", "after"), blocks, strict=True):
        model = tmp_path / f"{name}.loom"
        model.write_text(text, encoding="utf-8")
        snapshots.append(_snapshot(model, tmp_path / name))
    plan = make_plan(*snapshots, fallback_file="after.loom")
    assert code in {f.diagnostic.code for f in plan.findings}, plan.render({})
