"""`loom migrate apply` of a step that breaks the running code while a replica of the older model
serves (issue 26 §5.10), on SQLite and PostgreSQL: the replica records itself in the database,
`apply` refuses and names it, `--force` applies, and the old replica then answers 503 with
`Retry-After` (its schema changed under it), never 500; stopped, it deletes its row."""

from __future__ import annotations

import asyncio
import re
import shutil
from collections import Counter
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tests.liveserver import free_port, running
from tests.migrate.test_deployables import loom

V1 = """\
context Store {
  aggregate Customer with crudish {
    name: string
    note: string?
  }
  repository Customers for Customer { }
}
"""
V2 = V1.replace("    note: string?\n", "")


def _replica_rows(url: str) -> int:
    async def count() -> int:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                return int(
                    (await conn.execute(text("SELECT count(*) FROM __loom_replicas"))).scalar_one()
                )
        finally:
            await engine.dispose()

    return asyncio.run(count())


def test_a_breaking_step_waits_for_older_replicas(tmp_path: Path, database_url: str) -> None:
    url = ["--database-url", database_url]
    v1, v2 = tmp_path / "v1" / "store.loom", tmp_path / "v2" / "store.loom"
    for model, source in ((v1, V1), (v2, V2)):
        model.parent.mkdir()
        model.write_text(source, encoding="utf-8")
    assert loom("migrate", "new", v1).returncode == 0
    assert loom("migrate", "apply", v1, *url).returncode == 0
    shutil.copytree(v1.parent / "migrations", v2.parent / "migrations")
    r = loom("migrate", "new", v2, "--allow-data-loss", "-m", "drop note")
    assert r.returncode == 0 and "loom.migrate-breaks-running-code" in r.stdout, r.stdout
    seen: Counter[int] = Counter()
    with running(str(v1), *url, port=free_port()) as base:
        ann = httpx.post(f"{base}/api/customers", json={"name": "Ann", "note": "n"}).json()["id"]
        assert _replica_rows(database_url) == 1
        refused = loom("migrate", "apply", v2, *url)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        said = refused.stderr
        assert "replicas of an older revision are serving" in said, said
        assert "0002_drop_note breaks the running code: drop column store_customers.note" in said
        assert re.search(
            r"serving: \S+ pid \d+ \(revision 0001(, model revision \S+)?, last heartbeat \d+ s ago\)",
            said,
        )
        assert "pass --force" in said
        status = loom("migrate", "status", v2, *url)
        assert "pending  0002_drop_note" in status.stdout, status.stdout
        forced = loom("migrate", "apply", v2, *url, "--force")
        assert forced.returncode == 0, forced.stdout + forced.stderr
        assert "--force: applying while replicas of an older revision serve" in forced.stdout
        assert "applied 0002_drop_note" in forced.stdout
        # the old replica: its statements name a column the database no longer has
        with httpx.Client(base_url=base, timeout=30) as http:
            for _ in range(20):
                for answer in (
                    http.get(f"/api/customers/{ann}"),
                    http.get("/api/customers"),
                    http.post("/api/customers", json={"name": "Bo"}),
                ):
                    seen[answer.status_code] += 1
                    assert answer.status_code == 503, answer.text
                    assert answer.headers["retry-after"] == "5"
                    assert answer.json()["type"] == "urn:loom:problem:schema-changed"
    print(f"old replica after a forced breaking apply: {dict(seen)}")
    assert _replica_rows(database_url) == 0  # stopped in order: its row is gone
    with running(str(v2), *url, port=free_port()) as base:
        assert httpx.get(f"{base}/api/customers/{ann}").json()["name"] == "Ann"
