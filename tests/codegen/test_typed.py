"""Generated services are typed: each example's package passes `mypy --strict`."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.build.package import build_model
from loom.lang import compile_files
from tests.codegen.util import mypy_strict

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = {
    "banking": ["examples/banking/banking.loom"],
    "sales": ["examples/sales/sales.loom", "examples/sales/onboarding.loom"],
    "support": ["examples/support/support.loom"],
    "ok_support_workflows": ["tests/lang/data/ok/support_workflows.loom"],
    "ok_values_payloads": ["tests/lang/data/ok/values_payloads.loom"],
    "shop": ["examples/shop/shop.loom"],
    "scheduling": ["examples/scheduling/scheduling.loom"],
    "ok_events": ["tests/lang/data/ok/events.loom"],
    "ok_renames": ["tests/lang/data/ok/renames.loom"],
    "principal": ["tests/e2e/models/principal.loom"],
    "reminder_at_loaded": ["tests/e2e/models/reminder_at_loaded.loom"],
    "mutual_ids": ["tests/e2e/models/mutual_ids.loom"],
    "wire_values": ["tests/e2e/models/wire_values.loom"],
    "hotel_time": ["tests/e2e/models/hotel_time.loom"],
    "decimal_params": ["tests/e2e/models/decimal_params.loom"],
    "lists": ["tests/e2e/models/lists.loom"],
    "list_functions": ["tests/e2e/models/list_functions.loom"],
    "builtin_functions": ["tests/e2e/models/builtin_functions.loom"],
    "system_principal": ["tests/e2e/models/system_principal.loom"],
    "read_rules": ["tests/e2e/models/read_rules.loom"],
    "wire_strict": ["tests/e2e/models/wire_strict.loom"],
    "eventsourced_reactions": ["tests/e2e/models/eventsourced_reactions.loom"],
    "dunning": ["tests/e2e/models/dunning.loom"],
    "refused_saves": ["tests/e2e/models/refused_saves.loom"],
    "entry_gates": ["tests/e2e/models/entry_gates.loom"],
    "wide_finds": ["tests/e2e/models/wide_finds.loom"],
}


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_generated_package_passes_mypy_strict(example: str, tmp_path: Path) -> None:
    result = compile_files([str(ROOT / f) for f in EXAMPLES[example]])
    assert result.model is not None
    build_model(result.model, tmp_path / example)
    run = mypy_strict(tmp_path, example)
    assert run.returncode == 0, run.stdout + run.stderr
