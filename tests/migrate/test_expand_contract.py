"""`loom migrate new --expand` and `--contract` (docs/migrations.md#rolling-deploys): their scripts
against golden files, and what the commands refuse; the two-process rollout is test_rolling.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from loom.cli.main import app
from loom.migrate.diff import diff
from loom.migrate.rolling import contract_steps, expand_steps, expanded_snapshot, open_expand
from loom.migrate.script import render_script
from loom.migrate.snapshot import Snapshot, model_view
from loom.migrate.steps import Step, sync_trigger
from loom.migrate.tables import snapshot_of
from tests.migrate.kit import accounts
from tests.migrate.test_rolling import V1, V2

GOLDEN = Path(__file__).parent / "golden"


def _expand() -> tuple[list[Step], Snapshot]:
    """Accounts 2 -> 3 as an expand: `number` renamed to `code` (and the rest of that change)."""
    steps = expand_steps(diff(snapshot_of(accounts(2)), snapshot_of(accounts(3))))
    return steps, expanded_snapshot(snapshot_of(accounts(3)), steps, "0007")


def _scripts() -> dict[str, str]:
    steps, opened = _expand()
    contract = contract_steps(opened, snapshot_of(accounts(3)))
    return {
        "0007_expand": render_script(
            "0007", "0006", "expand", [s.describe() for s in steps], steps
        ),
        "0008_contract": render_script(
            "0008", "0007", "contract", [s.describe() for s in contract], contract
        ),
    }


@pytest.mark.parametrize("name", ["0007_expand", "0008_contract"])
def test_script_matches_golden(name: str, update_snapshots: bool) -> None:
    path = GOLDEN / f"{name}.py.golden"
    text = _scripts()[name]
    if update_snapshots or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_scripts_are_formatted(tmp_path: Path) -> None:
    for name, text in _scripts().items():
        (tmp_path / f"m_{name}.py").write_text(text, encoding="utf-8")
    ruff = Path(sys.executable).parent / "ruff"
    for args in (["format", "--check", "--diff"], ["check", "--isolated", "--select", "F,I"]):
        r = subprocess.run(
            [str(ruff), *args, str(tmp_path)], capture_output=True, text=True, check=False
        )
        assert r.returncode == 0, r.stdout + r.stderr


def test_the_expand_snapshot_keeps_the_old_column_and_the_model_view_drops_it() -> None:
    _, opened = _expand()
    assert open_expand(opened) == "0007"
    columns = {c["name"]: c for c in opened["tables"]["bank_accounts"]["columns"]}
    assert columns["number"]["nullable"] and not columns["code"]["nullable"]
    # the model's schema is the expand's without what it keeps: nothing left to migrate
    assert diff(model_view(opened), snapshot_of(accounts(3))) == []
    # the contract drops the kept column first, and nothing else here
    contract = contract_steps(opened, snapshot_of(accounts(3)))
    said = "contract: drop column bank_accounts.number, kept by the expand 0007 (its values are in"
    assert [s.describe() for s in contract] == [f"{said} code)"]


def _loom(*args: str | Path) -> tuple[int, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    return r.exit_code, r.output


@pytest.fixture
def models(tmp_path: Path) -> tuple[Path, Path]:
    """Version N with its first migration, and N+1 (a rename) with the same migrations."""
    v1, v2 = tmp_path / "v1" / "store.loom", tmp_path / "v2" / "store.loom"
    v1.parent.mkdir()
    v1.write_text(V1, encoding="utf-8")
    assert _loom("migrate", "new", v1)[0] == 0
    v2.parent.mkdir()
    (v1.parent / "migrations").rename(v2.parent / "migrations")
    v2.write_text(V2, encoding="utf-8")
    return v1, v2


def test_expand_needs_a_rename(models: tuple[Path, Path]) -> None:
    _, v2 = models
    v2.write_text(V1.replace("    points: int\n", "    points: int\n    note: string?\n"))
    code, said = _loom("migrate", "new", v2, "--expand")
    assert code == 1 and "nothing to expand: the change renames no field" in said


def test_expand_refuses_a_rename_that_changes_the_type(models: tuple[Path, Path]) -> None:
    _, v2 = models
    v2.write_text(V1.replace("    points: int\n", "    score: string renamed from points\n"))
    code, said = _loom("migrate", "new", v2, "--expand")
    assert code == 1 and "store_customers.score is renamed and changes its type" in said


def test_contract_needs_an_open_expand(models: tuple[Path, Path]) -> None:
    code, said = _loom("migrate", "new", models[1], "--contract")
    assert code == 1 and "no expand is open" in said


def test_expand_and_contract_at_once_is_a_bad_argument(models: tuple[Path, Path]) -> None:
    code, said = _loom("migrate", "new", models[1], "--expand", "--contract")
    assert code == 2 and "--expand and --contract are two migrations" in said


def test_an_open_expand_comes_before_any_other_change(models: tuple[Path, Path]) -> None:
    _, v2 = models
    assert _loom("migrate", "new", v2, "--expand")[0] == 0
    # unchanged since the expand: nothing to write, and the contract is pending
    code, said = _loom("migrate", "new", v2)
    assert code == 0 and "no changes" in said and "expand open: contract pending" in said
    v2.write_text(V2.replace("    points: int\n", "    points: int\n    note: string?\n"))
    for flags in ([], ["--expand"]):
        code, said = _loom("migrate", "new", v2, *flags)
        assert code == 1 and "is open: the previous code may still run on its kept columns" in said
        assert f"loom migrate new {v2} --contract" in said
    # the contract takes the other changes with it, under the usual rules
    v2.write_text(V2.replace("    points: int\n", ""))
    code, said = _loom("migrate", "new", v2, "--contract")
    assert code == 1 and "loom.migrate-drops-data" in said and "--allow-data-loss" in said
    code, said = _loom("migrate", "new", v2, "--contract", "--allow-data-loss")
    assert code == 0, said
    assert "contract: drop column store_customers.name" in said
    assert "drop column store_customers.points" in said


def test_an_expand_on_sqlite_is_refused_and_nothing_applied(
    models: tuple[Path, Path], sqlite_url: str
) -> None:
    _, v2 = models
    assert _loom("migrate", "new", v2, "--expand")[0] == 0
    code, said = _loom("migrate", "apply", v2, "--database-url", sqlite_url)
    assert code == 1 and "needs PostgreSQL" in said and "Traceback" not in said
    code, said = _loom("migrate", "status", v2, "--database-url", sqlite_url)
    assert "pending  0002_" in said and "applied" not in said


def test_a_trigger_name_fits_postgresql() -> None:
    assert sync_trigger("store_customers", "full_name") == "loom_sync_store_customers_full_name"
    long = [sync_trigger("t" * 40, f"column_{n}" * 3) for n in range(2)]
    assert all(len(name) <= 63 for name in long) and long[0] != long[1]
