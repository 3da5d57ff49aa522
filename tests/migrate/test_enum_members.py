"""Removing an enum member that stored rows still hold (issue 26 §5.1), through the real commands
and the served HTTP routes, on SQLite and PostgreSQL: `loom migrate new` counts the rows and
refuses; `--rewrite 'ClaimStatus.Rejected -> Withdrawn'` writes the migration that rewrites them;
the revision refuses to apply while rows hold a removed member; `loom run` refuses a database
holding a value its model lacks (exit 2); and a read of such a row is a 503 naming the value,
never a 500."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.liveserver import free_port, refused_start, running
from tests.migrate.test_deployables import loom

V1 = """\
context Claims {
  enum ClaimStatus { Open, Rejected, Withdrawn }
  aggregate Claim with crudish {
    title: string
    status: ClaimStatus = Open
    history: ClaimStatus[] = []
  }
  repository Claims for Claim { }
}
"""
V2 = V1.replace("Open, Rejected, Withdrawn", "Open, Withdrawn")


def _sql(url: str, statement: str) -> list[tuple[object, ...]]:
    async def run() -> list[tuple[object, ...]]:
        engine = create_async_engine(url)
        try:
            async with engine.begin() as conn:
                result = await conn.execute(text(statement))
                return [tuple(r) for r in result.all()] if result.returns_rows else []
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _statuses(url: str) -> list[str]:
    return sorted(str(r[0]) for r in _sql(url, "SELECT status FROM claims_claims"))


def _model(folder: Path, text_: str) -> Path:
    folder.mkdir(exist_ok=True)
    model = folder / "claims.loom"
    model.write_text(text_, encoding="utf-8")
    return model


def test_a_removed_member_rows_hold_is_refused_then_rewritten(
    tmp_path: Path, database_url: str
) -> None:
    url = ["--database-url", database_url]
    model = _model(tmp_path / "app", V1)
    assert loom("migrate", "new", model).returncode == 0
    assert loom("migrate", "apply", model, *url).returncode == 0
    with running(str(model), *url, port=free_port()) as base:
        for title, status in [("a", "Rejected"), ("b", "Rejected"), ("c", "Open")]:
            created = httpx.post(f"{base}/api/claims", json={"title": title, "status": status})
            assert created.status_code == 201, created.text
    model.write_text(V2, encoding="utf-8")

    # the lint counts the rows and refuses, offering both ways out
    r = loom("migrate", "new", model, *url)
    assert r.returncode == 1, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "error[loom.migrate-enum-member-in-use]" in said, said
    assert "2 row(s) hold 'Rejected' in claims_claims.status" in said
    assert "renamed from Rejected" in said and "--rewrite 'ClaimStatus.Rejected ->" in said
    assert "nothing written" in said and not (model.parent / "migrations" / "0002").exists()
    # a model change no migration holds: `loom run` refuses (exit 2)
    assert "retire enum member(s) of claims_claims.status" in refused_start(str(model), *url)

    # a rewrite to a member the enum lacks is refused by name
    r = loom("migrate", "new", model, *url, "--rewrite", "ClaimStatus.Rejected -> Gone")
    assert r.returncode == 1 and "ClaimStatus has no member Gone" in r.stderr, r.stderr
    r = loom("migrate", "new", model, *url, "--rewrite", "Rejected to Withdrawn")
    assert r.returncode == 2 and "expected `Enum.Old -> New`" in r.stderr, r.stderr

    # written while no row held it (another database): the revision checks again when it applies
    elsewhere = f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"
    r = loom("migrate", "new", model, "--database-url", elsewhere, "-m", "retire")
    assert r.returncode == 0, r.stdout + r.stderr
    r = loom("migrate", "apply", model, *url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "claims_claims.status may hold only Open, Withdrawn now" in r.stderr, r.stderr
    assert "'Rejected' (2 row(s))" in r.stderr
    assert _statuses(database_url) == ["Open", "Rejected", "Rejected"]  # rolled back
    for written in (model.parent / "migrations").glob("0002_*"):
        written.unlink()

    # the rewrite spelled on the command line
    rewrite = ["--rewrite", "ClaimStatus.Rejected -> Withdrawn"]
    r = loom("migrate", "new", model, *url, *rewrite, "-m", "retire rejected")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "'Rejected' rewritten to 'Withdrawn'" in r.stdout
    assert loom("migrate", "apply", model, *url).returncode == 0
    assert _statuses(database_url) == ["Open", "Withdrawn", "Withdrawn"]
    with running(str(model), *url, port=free_port()) as base:
        page = httpx.get(f"{base}/api/claims").json()
        assert sorted(c["status"] for c in page["items"]) == ["Open", "Withdrawn", "Withdrawn"]


def test_loom_run_refuses_and_reads_answer_503(tmp_path: Path, database_url: str) -> None:
    url = ["--database-url", database_url]
    model = _model(tmp_path / "app", V1)
    assert loom("migrate", "new", model).returncode == 0
    assert loom("migrate", "apply", model, *url).returncode == 0
    # a snapshot from before the snapshots listed an enum's members: the diff cannot see the
    # removal, and `migrate new` used to say "no changes"
    snapshot = next((model.parent / "migrations").glob("0001_*.json"))
    data = json.loads(snapshot.read_text())
    for table in data["tables"].values():
        for column in table["columns"]:
            column["info"].pop("members", None)
            column["info"].pop("enum", None)
    snapshot.write_text(json.dumps(data))
    with running(str(model), *url, port=free_port()) as base:
        created = httpx.post(f"{base}/api/claims", json={"title": "a", "status": "Rejected"})
        assert created.status_code == 201, created.text
    model.write_text(V2, encoding="utf-8")
    said = refused_start(str(model), *url)
    assert "the database holds enum values the model has no member for" in said, said
    assert "claims_claims.status holds 'Rejected' (1 row(s))" in said
    assert "--rewrite 'ClaimStatus.Rejected -> <a member of ClaimStatus>'" in said
    r = loom("migrate", "new", model, *url)
    assert r.returncode == 1 and "1 row(s) hold 'Rejected'" in r.stdout, r.stdout + r.stderr

    # a replica serving while such a value appears (written by another version): 503, named
    _sql(database_url, "UPDATE claims_claims SET status = 'Open'")
    with running(str(model), *url, port=free_port()) as base:
        ok = httpx.post(f"{base}/api/claims", json={"title": "b"})
        assert ok.status_code == 201, ok.text
        _sql(database_url, "UPDATE claims_claims SET status = 'Rejected' WHERE title = 'a'")
        ident = _sql(database_url, "SELECT id FROM claims_claims WHERE title = 'a'")[0][0]
        answers = [
            httpx.get(f"{base}/api/claims"),
            httpx.get(f"{base}/api/claims/{ident}"),
            httpx.patch(f"{base}/api/claims/{ident}", json={"title": "c"}),
        ]
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert answer.headers["retry-after"] == "5"
            body = answer.json()
            assert body["type"] == "urn:loom:problem:stored-value-unknown", body
            assert (body["column"], body["value"], body["enum"]) == (
                "claims_claims.status",
                "Rejected",
                "ClaimStatus",
            )
            assert "claims_claims.status holds 'Rejected'" in body["detail"]
        # the other rows are still served by id
        assert httpx.get(f"{base}/api/claims/{ok.json()['id']}").status_code == 200
        # a list of members holding a removed one: the same 503, naming the list's column
        _sql(database_url, 'UPDATE claims_claims SET history = \'["Open", "Rejected"]\'')
        listed = httpx.get(f"{base}/api/claims/{ok.json()['id']}")
        assert listed.status_code == 503, listed.text
        body = listed.json()
        assert (body["column"], body["value"]) == ("claims_claims.history", "Rejected"), body
    print(f"reads of a row holding a removed member: {[r.status_code for r in answers]}")
