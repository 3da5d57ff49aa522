"""Migrations and dead letters per deployable, through the real commands: each deployable has its
own folder (`migrations/<deployable>/`, only its contexts' tables) and its own database
(`<deployable>.db`), `loom run --deployable` checks and applies that folder as the whole-model run
does `migrations/`, and `loom dead-letters --deployable` finds that database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.liveserver import free_port, refused_start, running
from tests.waiting import wait_until

V1 = """\
deployable Front { contexts: Desk }
deployable Back { contexts: Stock }

context Desk {
  aggregate Ticket with crudish {
    email: string
    operation resolve() { emit Resolved { ticket: id, email: email } }
  }
  repository Tickets for Ticket { }
  event Resolved { ticket: Ticket id, email: string }
  channel Done { carries: Resolved  maxAttempts: 1 }
  workflow FollowUp {
    on(e: Resolved) { precondition e.email != "boom@example.test" message "no boom" }
  }
}

context Stock {
  aggregate Item with crudish { sku: string }
  repository Items for Item { }
}
"""
# one optional field more in each deployable's context
V2 = V1.replace("    email: string\n", "    email: string\n    note: string?\n").replace(
    "{ sku: string }", "{ sku: string  label: string? }"
)


def loom(*args: str | Path) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [sys.executable, "-m", "loom.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in r.stderr, r.stderr
    return r


def _folder(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def _tables(snapshot: Path) -> set[str]:
    return set(json.loads(snapshot.read_text(encoding="utf-8"))["tables"])


def test_each_deployable_migrates_its_own_tables_on_its_own_database(tmp_path: Path) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(V1, encoding="utf-8")
    migrations = tmp_path / "migrations"

    r = loom("migrate", "new", model)  # which deployable's? the command must be told
    assert r.returncode == 2, r.stdout + r.stderr
    assert "the model declares deployables (Front, Back)" in r.stderr
    assert f"`loom migrate new {model} --deployable Front`" in r.stderr
    assert not migrations.exists()
    r = loom("migrate", "new", model, "--deployable", "Fron")
    assert r.returncode == 2 and "did you mean `Front`?" in r.stderr, r.stderr

    for name in ("Front", "Back"):
        r = loom("migrate", "new", model, "--deployable", name)
        assert r.returncode == 0, r.stderr
    assert sorted(_folder(migrations / "front")) == [
        "0001_initial_schema.json",
        "0001_initial_schema.py",
    ]
    front = _tables(migrations / "front" / "0001_initial_schema.json")
    back = _tables(migrations / "back" / "0001_initial_schema.json")
    assert "desk_tickets" in front and "stock_items" not in front, front
    assert "stock_items" in back and "desk_tickets" not in back, back
    assert "__loom_outbox" in front and "__loom_outbox" not in back  # only Front has a channel
    assert not list(migrations.glob("*.py"))  # the whole model's folder holds none

    r = loom("migrate", "status", model)  # the whole model's: points at the deployables'
    assert r.returncode == 1 and "name one with --deployable" in r.stderr, r.stderr
    r = loom("migrate", "status", model, "--deployable", "Back")
    assert r.returncode == 1, r.stdout
    assert f"database: sqlite+aiosqlite:///{tmp_path / 'back.db'}" in r.stdout
    assert "pending  0001_initial_schema" in r.stdout
    r = loom("migrate", "apply", model, "--deployable", "Back")
    assert r.returncode == 0 and "applied 0001_initial_schema" in r.stdout, r.stdout + r.stderr

    # a fresh database of Front: `loom run --deployable Front` applies Front's migrations
    with running(str(model), "--deployable", "Front", port=free_port()) as base:
        resp = httpx.post(f"{base}/api/tickets", json={"email": "ann@example.test"})
        assert resp.status_code == 201, resp.text
        ann = resp.json()["id"]
    assert (tmp_path / "front.db").is_file() and not (tmp_path / "desk.db").exists()
    r = loom("migrate", "status", model, "--deployable", "Front")
    assert r.returncode == 0 and "applied  0001_initial_schema" in r.stdout, r.stdout
    # Front's database records a 0001 too, but not Back's: Back's migrations refuse it
    front_db = f"sqlite+aiosqlite:///{tmp_path / 'front.db'}"
    r = loom("migrate", "apply", model, "--deployable", "Back", "--database-url", front_db)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "records 0001_initial_schema but has drifted from its schema" in r.stderr
    assert "table stock_items is missing" in r.stderr and "another deployable" in r.stderr

    # the model changes in both deployables' contexts
    model.write_text(V2, encoding="utf-8")
    before_back = _folder(migrations / "back")
    said = refused_start(str(model), "--deployable", "Front")
    assert f"the model has changes no migration in {migrations / 'front'} holds" in said
    assert "add column desk_tickets.note (String, optional)" in said
    assert "stock_items" not in said
    assert f"`loom migrate new {model} --deployable Front`" in said

    r = loom("migrate", "new", model, "--deployable", "Front", "-m", "note")
    assert r.returncode == 0, r.stderr
    assert "1. add column desk_tickets.note (String, optional)" in r.stdout
    assert "stock_items" not in r.stdout and "2." not in r.stdout, r.stdout
    assert (migrations / "front" / "0002_note.py").is_file()
    assert _folder(migrations / "back") == before_back  # Back's folder untouched

    # Back is refused until its own change is migrated, then until it is applied
    said = refused_start(str(model), "--deployable", "Back")
    assert f"no migration in {migrations / 'back'} holds" in said
    assert "add column stock_items.label (String, optional)" in said
    r = loom("migrate", "new", model, "--deployable", "Back", "-m", "label")
    assert r.returncode == 0, r.stderr
    assert "desk_tickets" not in r.stdout, r.stdout
    said = refused_start(str(model), "--deployable", "Back")
    assert "the database is behind its model (at 0001_initial_schema; pending: 0002_label)" in said
    assert f"`loom migrate apply {model} --deployable Back`" in said
    r = loom("migrate", "status", model, "--deployable", "Back")
    assert r.returncode == 1 and "pending  0002_label" in r.stdout, r.stdout
    r = loom("migrate", "apply", model, "--deployable", "Back")
    assert r.returncode == 0 and "applied 0002_label" in r.stdout, r.stdout + r.stderr
    r = loom("migrate", "status", model, "--deployable", "Back")
    assert r.returncode == 0 and "up to date" in r.stdout, r.stdout

    # Front's database is behind too: `--migrate` applies its 0002, and its rows are kept
    with running(str(model), "--deployable", "Front", "--migrate", port=free_port()) as base:
        got = httpx.get(f"{base}/api/tickets/{ann}").json()
        assert (got["email"], got["note"]) == ("ann@example.test", None)
    r = loom("migrate", "status", model, "--deployable", "Front")
    assert r.returncode == 0 and "applied  0002_note" in r.stdout, r.stdout


def test_contexts_have_their_folder_named_like_their_database(tmp_path: Path) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(V1, encoding="utf-8")
    r = loom("migrate", "new", model, "--contexts", "Stock,Desk")
    assert r.returncode == 0, r.stderr
    snapshot = tmp_path / "migrations" / "desk-stock" / "0001_initial_schema.json"
    assert {"desk_tickets", "stock_items"} <= _tables(snapshot)
    r = loom("migrate", "apply", model, "--contexts", "Desk,Stock")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "desk-stock.db").is_file()
    r = loom("migrate", "status", model, "--contexts", "Desk", "--deployable", "Front")
    assert r.returncode == 2 and "--contexts or --deployable" in r.stderr, r.stderr
    model.write_text(V2, encoding="utf-8")
    said = refused_start(str(model), "--contexts", "Desk,Stock")
    assert f"no migration in {tmp_path / 'migrations' / 'desk-stock'} holds" in said
    assert f"`loom migrate new {model} --contexts Desk,Stock`" in said


def _dead_letters(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return loom("dead-letters", *args)


def test_dead_letters_of_a_deployable(tmp_path: Path) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(V1, encoding="utf-8")
    r = _dead_letters("list", model, "--deployable", "Front")
    assert r.returncode == 2, r.stdout
    assert f"no database at {tmp_path / 'front.db'}" in r.stderr
    assert "loom run --deployable Front" in r.stderr
    with running(str(model), "--deployable", "Front", port=free_port()) as base:
        resp = httpx.post(f"{base}/api/tickets", json={"email": "boom@example.test"})
        assert resp.status_code == 201, resp.text
        ticket = resp.json()["id"]
        assert httpx.post(f"{base}/api/tickets/{ticket}/resolve", json={}).status_code == 204

        def dead_lettered() -> subprocess.CompletedProcess[str] | None:
            listed = _dead_letters("list", model, "--deployable", "Front")
            assert listed.returncode == 0, listed.stderr
            return listed if listed.stdout.startswith("1 dead letter(s)") else None

        # the relay delivers; the reaction refuses; dead
        listed = wait_until(dead_lettered, timeout=30, what="one dead letter", interval=0.5)
    print(f"dead letters of Front: {listed.stdout.splitlines()[0]}")
    assert listed.stdout.startswith("1 dead letter(s)"), listed.stdout
    assert "Desk.Resolved  channel=Desk.Done  attempts=1" in listed.stdout
    assert "last error: Desk.FollowUp.on(Resolved): Refused: no boom" in listed.stdout
    # the whole model's database is another one, and Front's is found from the model's folder
    r = _dead_letters("list", model)
    assert r.returncode == 2 and f"no database at {tmp_path / 'desk.db'}" in r.stderr
    r = _dead_letters("redrive", "--all", tmp_path, "--deployable", "Front")
    assert (r.returncode, r.stdout.strip()) == (0, "redriven 1 dead letter(s)"), r.stderr
    r = _dead_letters("list", model, "--deployable", "Front")
    assert (r.returncode, r.stdout.strip()) == (0, "no dead letters"), r.stdout + r.stderr


def test_a_rename_is_left_over_only_once_no_folder_needs_it(tmp_path: Path) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(V1, encoding="utf-8")
    for name in ("Front", "Back"):
        assert loom("migrate", "new", model, "--deployable", name).returncode == 0
    renamed = V1.replace("email: string\n", "mail: string renamed from email\n", 1)
    model.write_text(renamed.replace("email: email }", "email: mail }"), encoding="utf-8")
    r = loom("migrate", "new", model, "--deployable", "Front", "-m", "mail")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rename column desk_tickets.email to mail" in r.stdout, r.stdout
    # Front's last migration applied the rename, Back's tables have no Desk field
    r = loom("check", "--color", "never", model)
    assert r.returncode == 0, r.stderr
    assert "warning[loom.leftover-rename]" in r.stderr + r.stdout
    assert "the last migration (front/0002_mail)" in r.stderr + r.stdout
    # the whole model's own history (from before the deployables) still has `email`: needed
    whole = tmp_path / "migrations"
    for part in ("json", "py"):
        src = whole / "front" / f"0001_initial_schema.{part}"
        (whole / src.name).write_bytes(src.read_bytes())
    r = loom("check", "--color", "never", model)
    assert r.returncode == 0, r.stderr
    assert "leftover-rename" not in r.stderr + r.stdout, r.stderr
    # and `migrate new` without --deployable continues that history, saying what it is
    r = loom("migrate", "new", model, "-m", "whole")
    assert r.returncode == 0, r.stderr
    assert "note: the model declares deployables; this is the whole model's migration" in r.stdout
    assert (whole / "0002_whole.py").is_file()


def test_a_deployable_or_context_the_model_lacks_is_refused_by_every_command(
    tmp_path: Path,
) -> None:
    model = tmp_path / "desk.loom"
    model.write_text(V1, encoding="utf-8")
    assert loom("migrate", "new", model, "--deployable", "Front").returncode == 0
    known = "did you mean `Front`? its deployables: Front, Back"
    for args in [
        ("migrate", "status", model, "--deployable", "Fron"),
        ("migrate", "apply", model, "--deployable", "Fron"),
        ("dead-letters", "list", model, "--deployable", "Fron"),
        ("dead-letters", "redrive", "--all", tmp_path, "--deployable", "Fron"),
        ("timers", "list", model, "--deployable", "Fron"),
        # the database given does not make the name right
        ("timers", "list", model, "--deployable", "Fron", "--database-url", "sqlite:///x.db"),
    ]:
        r = loom(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr == f"error: the model has no deployable `Fron` ({known})\n", (
            args,
            r.stderr,
        )
    r = loom("migrate", "status", model, "--contexts", "Desk,Stok")
    assert r.returncode == 2 and "no context `Stok` (did you mean `Stock`?" in r.stderr, r.stderr
    assert not (tmp_path / "fron.db").exists() and not (tmp_path / "migrations/fron").exists()
