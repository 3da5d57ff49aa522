"""`loom.leftover-rename` on a model split into deployables (issue 26 §5.4), through the real
commands: a clause is kept while a declared deployable holding its context has no migrations of
its own (its database, created from the model as it was, still needs it for its baseline and the
change after it); the finding names the column (`claimant_name`), not the field; and `loom up`
prints the model's warnings once, not once more per deployable."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path

from tests.cli.test_up import _wait_for, loom_up
from tests.liveserver import free_ports
from tests.migrate.test_deployables import loom

V1 = """\
deployable Intake { contexts: Claims }
deployable Desk { contexts: Notes }

context Claims {
  aggregate Claim with crudish {
    claimant: string
  }
  repository Claims for Claim { }
}

context Notes {
  aggregate Note with crudish { text: string }
  repository Notes for Note { }
}
"""
V2 = V1.replace("claimant: string", "claimantName: string renamed from claimant")
CODE = "warning[loom.leftover-rename]"


def _check(model: Path) -> str:
    r = loom("check", "--color", "never", model)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout + r.stderr


def test_a_deployable_without_migrations_keeps_the_clause(tmp_path: Path) -> None:
    model = tmp_path / "claims.loom"
    model.write_text(V1, encoding="utf-8")
    migrations = tmp_path / "migrations"
    # the whole model's history, from before the deployables were used, applies the rename
    assert loom("migrate", "new", model, "--deployable", "Intake").returncode == 0
    for part in ("json", "py"):
        src = migrations / "intake" / f"0001_initial_schema.{part}"
        (migrations / src.name).write_bytes(src.read_bytes())
    shutil.rmtree(migrations / "intake")
    model.write_text(V2, encoding="utf-8")
    r = loom("migrate", "new", model, "-m", "rename")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rename column claims_claims.claimant to claimant_name" in r.stdout, r.stdout
    # Intake's database (`loom up`'s intake.db) is under no migration yet: it still needs it
    assert CODE not in _check(model)
    # once Intake's own folder has applied it too, it is left over, named by its column
    model.write_text(V1, encoding="utf-8")
    assert loom("migrate", "new", model, "--deployable", "Intake").returncode == 0
    model.write_text(V2, encoding="utf-8")
    r = loom("migrate", "new", model, "--deployable", "Intake", "-m", "rename")
    assert r.returncode == 0, r.stdout + r.stderr
    said = _check(model)
    assert said.count(CODE) == 1, said
    assert "already has column `claimant_name` (field `claimantName`)" in said, said
    assert "no longer `claimant`" in said and "claimantName`)" in said
    assert "column as `claimantName`" not in said


def test_loom_up_prints_a_warning_once(tmp_path: Path) -> None:
    model = tmp_path / "claims.loom"
    model.write_text(V1, encoding="utf-8")
    for name in ("Intake", "Desk"):
        assert loom("migrate", "new", model, "--deployable", name).returncode == 0
    model.write_text(V2, encoding="utf-8")
    assert loom("migrate", "new", model, "--deployable", "Intake", "-m", "rename").returncode == 0
    source = tmp_path / "source" / model.name  # loom_up writes it beside the migrations
    source.parent.mkdir()
    source.write_text(V2, encoding="utf-8")
    with loom_up(tmp_path, free_ports(2), source, "") as (proc, log):
        _wait_for(log, proc, "Ctrl-C stops them all.")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, log.read_text()
    seen = log.read_text()
    print(f"leftover warnings printed by loom up: {seen.count(CODE)}")
    assert seen.count(CODE) == 1, seen
