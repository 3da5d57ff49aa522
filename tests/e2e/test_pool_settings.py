"""The connection pool is sized by the replica's environment (LOOM_POOL_SIZE, LOOM_POOL_OVERFLOW,
LOOM_POOL_TIMEOUT; `loom run --pool-size/--pool-overflow/--pool-timeout`), on SQLite and
PostgreSQL: with every connection of a 2 + 0 pool held, a request waits the 0.5 s pool timeout and
answers `503 unavailable` with `Retry-After`, and the next one, once a connection is free, 200.
A bad value stops the start with the variable's name, not a traceback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import event

from loom.testing import serve

ROOT = Path(__file__).resolve().parents[2]
BANKING = [ROOT / "examples/banking/banking.loom"]


async def test_a_full_pool_answers_503_after_its_timeout(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_POOL_SIZE", "2")
    monkeypatch.setenv("LOOM_POOL_OVERFLOW", "0")
    monkeypatch.setenv("LOOM_POOL_TIMEOUT", "0.5")
    async with serve(BANKING, database_url) as client:
        pool = client.service.engine.sync_engine.pool
        assert (pool.size(), pool._max_overflow, pool._timeout) == (2, 0, 0.5)
        assert (await client.get("/api/customers")).status_code == 200
        held = [await client.service.engine.connect() for _ in range(2)]
        try:
            started = time.monotonic()
            r = await client.get("/api/customers")
            waited = time.monotonic() - started
        finally:
            for c in held:
                await c.close()
        print(f"full pool: {r.status_code} after {waited:.2f} s")
        assert r.status_code == 503, r.text
        assert r.json()["type"] == "urn:loom:problem:unavailable"
        assert "retry-after" in r.headers
        assert 0.4 <= waited < 5.0
        assert (await client.get("/api/customers")).status_code == 200
        # two at once fit the two connections: neither waits for the other's
        both = await asyncio.gather(*(client.get("/api/customers") for _ in range(2)))
        assert [b.status_code for b in both] == [200, 200]


@pytest.mark.parametrize(
    ("flag", "says"),
    [
        (["--pool-size", "0"], "LOOM_POOL_SIZE must be a whole number >= 1, not '0'"),
        (["--pool-timeout", "0"], "LOOM_POOL_TIMEOUT must be a number of seconds > 0, not '0'"),
    ],
)
def test_loom_run_refuses_a_bad_pool_setting(tmp_path: Path, flag: list[str], says: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_POOL")}
    run = subprocess.run(
        [
            str(Path(sys.executable).with_name("loom")),
            "run",
            *map(str, BANKING),
            "--port",
            "0",
            *flag,
            "--database-url",
            f"sqlite:///{tmp_path / 'b.db'}",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    print(run.returncode, run.stderr[-400:])
    assert run.returncode != 0
    assert says in run.stderr
    assert "Traceback" not in run.stderr


async def test_every_route_documents_the_503(database_url: str) -> None:
    """Any route can meet a full pool, the admin routes (dead letters, timers) included."""
    async with serve([ROOT / "examples/shop/shop.loom"], database_url) as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
    routes = {(m.upper(), p): op["responses"] for p, ops in paths.items() for m, op in ops.items()}
    assert ("GET", "/api/admin/dead-letters") in routes
    assert ("POST", "/api/admin/timers/{id}/fire") in routes
    missing = sorted(f"{m} {p}" for (m, p), responses in routes.items() if "503" not in responses)
    print(f"{len(routes)} routes, without a 503: {missing}")
    assert missing == []


async def _connections_opened_under_load(postgres_url: str, clients: int, requests: int) -> int:
    """DBAPI connections the service's pool opened while `clients` clients, after a warm-up,
    sent `requests` deposits and reads between them, in rounds (the pool's own `connect` event: every new
    connection to PostgreSQL passes it)."""
    async with serve(BANKING, postgres_url) as client:
        r = await client.post(
            "/api/workflows/register_customer", json={"name": "Ada", "email": None}
        )
        assert r.status_code in (200, 201), r.text
        r = await client.post(
            "/api/workflows/open_account", json={"owner": r.json(), "number": "A-1"}
        )
        assert r.status_code in (200, 201), r.text
        account = r.json()
        warm = [client.get(f"/api/accounts/{account}") for _ in range(clients * 2)]
        assert {r.status_code for r in await asyncio.gather(*warm)} == {200}
        opened: list[object] = []
        event.listen(client.service.engine.sync_engine, "connect", lambda *_: opened.append(1))

        async def one(i: int) -> int:
            if i % 2:
                return (await client.get(f"/api/accounts/{account}")).status_code
            r = await client.post(f"/api/accounts/{account}/deposit", json={"amount": 1})
            return r.status_code

        # in rounds of `clients` at once, as clients that each wait for their answer come and
        # go: between two rounds every connection is back in the pool
        codes: list[int] = []
        for _ in range(requests // clients):
            codes += await asyncio.gather(*(one(i) for i in range(clients)))
        assert len(codes) == requests and set(codes) <= {200, 204}, sorted(set(codes))
        return len(opened)


@pytest.mark.postgres
async def test_a_steady_load_opens_no_connection_per_request(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """16 clients, 2,000 requests on PostgreSQL: the default pool (15 kept, none opened beyond)
    opens at most its size after the warm-up. SQLAlchemy's own default (5 kept, 10 more opened
    under load and closed on return), measured the same way, opens connections over and over:
    the count is what this test would see if the default went back."""
    for name in ("LOOM_POOL_SIZE", "LOOM_POOL_OVERFLOW", "LOOM_POOL_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    sized = await _connections_opened_under_load(postgres_url, clients=16, requests=2000)
    monkeypatch.setenv("LOOM_POOL_SIZE", "5")
    monkeypatch.setenv("LOOM_POOL_OVERFLOW", "10")
    churning = await _connections_opened_under_load(postgres_url, clients=16, requests=2000)
    print(f"connections opened after warm-up: sized pool {sized}, 5 + 10 overflow {churning}")
    assert sized <= 15
    assert churning > 15  # the measurement sees churn when there is some
