"""`GET /healthz` and `GET /readyz` over HTTP, on SQLite and PostgreSQL (docs/observability.md):
ready while the database answers and matches the model; a PostgreSQL database that refuses
connections is a 503 `not-ready` naming it, and ready again once it answers. The broker side is
tests/runtime/broker/test_health.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints
import pytest
from sqlalchemy import make_url, text

from loom.testing import ServiceClient, serve
from tests.waiting import until

MODEL = [Path(__file__).resolve().parent / "models" / "durable_autocommit.loom"]
NOT_READY = "urn:loom:problem:not-ready"


async def answering(client: ServiceClient, status: int) -> Any:
    """`GET /readyz`'s answer when its status is `status`, else None (to poll)."""
    r = await client.get("/readyz")
    return r if r.status_code == status else None


def check_not_ready(r: Any, *words: str) -> list[str]:
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["type"] == NOT_READY and body["status"] == 503, body
    for word in words:
        assert any(word in reason for reason in body["reasons"]), body
    return list(body["reasons"])


async def test_alive_and_ready(database_url: str) -> None:
    async with serve(MODEL, database_url) as c:
        r = await c.get("/healthz")
        assert (r.status_code, r.json()) == (200, {"status": "ok"})
        r = await c.get("/readyz")
        assert (r.status_code, r.json()) == (200, {"status": "ready"}), r.text
        # neither is part of the API the model describes
        paths = (await c.get("/openapi.json")).json()["paths"]
        assert "/healthz" not in paths and "/readyz" not in paths


async def test_a_table_missing_from_the_model_is_not_ready(database_url: str) -> None:
    async with serve(MODEL, database_url) as c:
        looks = next(name for name in c.service.metadata.tables if "looks" in name)
        async with c.service.engine.begin() as conn:
            await conn.execute(text(f"DROP TABLE {looks}"))
        check_not_ready(await c.get("/readyz"), "does not match the model", f"{looks} is missing")
        assert (await c.get("/healthz")).status_code == 200


async def allow_connections(client: ServiceClient, allow: bool) -> None:
    """Let the service's PostgreSQL database take connections or not (its open ones are cut)."""
    url = make_url(str(client.service.engine.url))
    name = url.database
    admin = await asyncpg.connect(
        host=url.host, port=url.port, user=url.username, password=url.password, database="postgres"
    )
    try:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allow).lower()}')
        if not allow:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name
            )
    finally:
        await admin.close()


@pytest.mark.postgres
async def test_a_postgres_database_down_is_not_ready_then_ready_again(postgres_url: str) -> None:
    async with serve(MODEL, postgres_url, settle=False) as c:
        assert (await c.get("/readyz")).status_code == 200
        await allow_connections(c, False)
        try:
            # a pooled connection cut meanwhile may answer first: wait for the refusal
            r = await until(
                lambda: answering(c, 503),
                timeout=20,
                what="/readyz answers 503 while the database refuses connections",
            )
            check_not_ready(r, "the database does not answer")
            assert (await c.get("/healthz")).status_code == 200  # alive all along
        finally:
            await allow_connections(c, True)
        await until(
            lambda: answering(c, 200),
            timeout=20,
            what="/readyz answers 200 once the database answers again",
        )
