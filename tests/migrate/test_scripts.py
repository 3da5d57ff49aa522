"""The revision scripts `loom migrate new` writes, against golden files (`--update-snapshots`
rewrites them; review the diff): readable, deterministic, as ruff formats them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loom.migrate.plan import Plan
from loom.migrate.script import render_script
from loom.migrate.snapshot import ColumnSnap
from loom.migrate.steps import AddColumn
from tests.migrate.kit import accounts, altered, plan_between

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "0001_create": (None, 1),
    "0002_add_defaulted": (1, 2),
    "0003_renames": (2, 3),
    "0004_rename_table_drop": (3, 4),
    "0005_alter_columns_keys": (-1, -2),  # `altered` 1 -> 2
    "0006_relax_drop_keys": (-2, -3),  # `altered` 2 -> 3
}


def _script(name: str) -> str:
    old, new = CASES[name]
    if old is not None and old < 0:
        plan: Plan = plan_between(altered(-old), altered(-new))
    else:
        plan = plan_between(accounts(old) if old else None, accounts(new))
    number = name[:4]
    down = f"{int(number) - 1:04d}" if old else None
    return render_script(number, down, name[5:].replace("_", " "), plan.lines(), plan.steps)


@pytest.mark.parametrize("name", sorted(CASES))
def test_script_matches_golden(name: str, update_snapshots: bool) -> None:
    path = GOLDEN / f"{name}.py.golden"
    text = _script(name)
    assert text == _script(name)  # deterministic
    if update_snapshots or not path.exists():
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_scripts_are_formatted_and_compile(tmp_path: Path) -> None:
    for name in CASES:
        target = tmp_path / f"m_{name}.py"
        target.write_text(_script(name), encoding="utf-8")
        compile(target.read_text(), str(target), "exec")
    ruff = Path(sys.executable).parent / "ruff"
    r = subprocess.run(
        [str(ruff), "format", "--check", "--diff", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # nothing unused or unsorted among the imports either
    r = subprocess.run(
        [str(ruff), "check", "--isolated", "--select", "F,I", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_null_default_adds_a_column_with_no_server_default() -> None:
    """A column whose model default is null gets no `server_default`: the text 'null' would be
    stored in every existing row, and a datetime column could not read it back."""
    column: ColumnSnap = {
        "name": "ended_at",
        "type": "DateTime",
        "length": None,
        "nullable": True,
        "primary_key": False,
        "info": {"field": "endedAt", "default": None},
        "source": None,
    }
    text = render_script("0002", "0001", "add", ["add ended_at"], [AddColumn("t", column)])
    assert 'add_column(sa.Column("ended_at"' in text, text
    assert "server_default" not in text, text
