"""A lost or refused database connection is `503 database-unavailable` with `Retry-After`, never
`500 internal`, and the service recovers by itself (tests/e2e/models/durable_autocommit.loom).

PostgreSQL: the session's throwaway cluster is restarted (`pg_ctl restart -m immediate`) under
load; clients see only 2xx, 409 and 503, and the service answers again after. SQLite: a database
file that cannot be opened is the same 503.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from loom.testing import serve
from tests.chaos.servers import new_pg_database
from tests.pgcluster import Cluster, _as_postgres, find_pg_bin
from tests.waiting import until

MODEL = [Path(__file__).resolve().parent / "models" / "durable_autocommit.loom"]
UNAVAILABLE = "urn:loom:problem:database-unavailable"
# 503s a restart may cause: refused / lost connections, a pool that cannot refill in time, and a
# connection lost during COMMIT itself
RETRYABLE = {UNAVAILABLE, "urn:loom:problem:unavailable", "urn:loom:problem:outcome-unknown"}


def restart(cluster: Cluster) -> None:
    pg_bin = find_pg_bin()
    assert pg_bin is not None
    data, log = cluster.root / "data", cluster.root / "log"
    cmd = [str(pg_bin / "pg_ctl"), "-D", str(data), "-l", str(log), "-m", "immediate", "-w"]
    subprocess.run(_as_postgres([*cmd, "-t", "60", "restart"]), check=True, capture_output=True)


def check_problem(r: Any, seen: set[str]) -> None:
    if r.status_code == 503:
        body = r.json()
        assert body["type"] in RETRYABLE, body
        assert r.headers["content-type"] == "application/problem+json"
        assert int(r.headers["retry-after"]) >= 1
        seen.add(body["type"])
    else:
        assert r.status_code in {200, 201, 204, 409}, r.text


@pytest.mark.postgres
async def test_a_postgres_restart_is_503_unavailable_and_the_service_recovers(
    pg_cluster: Cluster,
) -> None:
    # A database of its own with synchronous_commit=on: the suite's cluster runs with it off, and
    # an immediate restart may then lose the last commits (seen under load: the schema itself).
    url = await new_pg_database(pg_cluster, f"outage_{uuid.uuid4().hex}", synchronous_commit=True)
    async with serve(MODEL, url, settle=False) as c:
        r = await c.post("/api/items", json={"name": "kept"})
        assert r.status_code == 201, r.text
        item = r.json()["id"]
        seen: set[str] = set()
        restarted = asyncio.Event()

        async def client() -> None:
            # runs until the restart is over and one more request succeeded
            while True:
                r = await c.post("/api/workflows/bump", json={"item": item})
                check_problem(r, seen)
                r = await c.get(f"/api/items/{item}")
                check_problem(r, seen)
                if restarted.is_set() and r.status_code == 200:
                    return
                await asyncio.sleep(0.01)  # the clients' pacing: steady load, not a spin

        async with asyncio.timeout(90):
            clients = [asyncio.create_task(client()) for _ in range(8)]
            await asyncio.sleep(0.3)  # the scenario: the clients are in full flow at the restart
            await asyncio.to_thread(restart, pg_cluster)
            restarted.set()
            await asyncio.gather(*clients)
        assert UNAVAILABLE in seen  # the outage was seen, and answered as such
        # the service answers again: reads, writes, and the bumps that answered 204 are there

        async def bumped() -> Any:
            r = await c.post("/api/workflows/bump", json={"item": item})
            return r if r.status_code == 204 else None

        r = await until(bumped, timeout=30, what="a bump answered 204", interval=0.1)
        assert r.status_code == 204, r.text
        r = await c.get(f"/api/items/{item}")
        assert r.status_code == 200 and r.json()["count"] >= 1, r.text


async def test_a_sqlite_file_that_cannot_be_opened_is_503_unavailable(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    async with serve(MODEL, f"sqlite+aiosqlite:///{folder / 'test.db'}", settle=False) as c:
        r = await c.post("/api/items", json={"name": "kept"})
        assert r.status_code == 201, r.text
        item = r.json()["id"]
        await c.service.engine.dispose()  # no pooled connection left open on the file
        # the relay may open (and so create) the file again between rmtree's unlink and rmdir

        def removed() -> bool:
            shutil.rmtree(folder, ignore_errors=True)
            return not folder.exists()

        await until(removed, timeout=5, what="the database folder removed", interval=0.01)
        assert not folder.exists()
        for r in (
            await c.get(f"/api/items/{item}"),
            await c.post("/api/workflows/bump", json={"item": item}),
        ):
            assert r.status_code == 503, r.text
            assert r.json()["type"] == UNAVAILABLE
            assert r.headers["retry-after"] == "2"


@pytest.mark.postgres
async def test_a_stopped_postgres_is_unavailable_not_an_unknown_outcome(
    pg_cluster: Cluster,
) -> None:
    """With the server down no write can have reached it: a create, a workflow and a read all
    answer `database-unavailable` ("nothing was written"), never `outcome-unknown`."""
    url = await new_pg_database(pg_cluster, f"stopped_{uuid.uuid4().hex}", synchronous_commit=True)
    async with serve(MODEL, url, settle=False) as c:
        r = await c.post("/api/items", json={"name": "kept"})
        assert r.status_code == 201, r.text
        item = r.json()["id"]
        await asyncio.to_thread(pg_cluster.stop)
        try:
            answers = [
                await c.post("/api/items", json={"name": "lost"}),
                await c.post("/api/workflows/bump", json={"item": item}),
                await c.get(f"/api/items/{item}"),
            ]
        finally:
            await asyncio.to_thread(pg_cluster.start)
        print("while stopped:", [(r.status_code, r.json()["type"]) for r in answers])
        for r in answers:
            assert r.status_code == 503, r.text
            assert r.json()["type"] == UNAVAILABLE, r.text

        async def read() -> bool:
            return (await c.get(f"/api/items/{item}")).status_code == 200

        await until(read, timeout=30, what="the item readable again", interval=0.1)
        listed = await c.get("/api/items")
        assert [i["name"] for i in listed.json()["items"]] == ["kept"]
