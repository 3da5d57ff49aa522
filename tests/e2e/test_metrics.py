"""`GET /metrics` over HTTP on SQLite and PostgreSQL (docs/observability.md#metrics), parsed with
`prometheus_client`'s parser: the request counters by route template, the outbox's lag rising
while its relay is stopped and back to 0 once it runs, the idempotency replays, and who may read
it. The broker side (deliveries, publish time, the lag while the broker is down) is
tests/runtime/broker/test_metrics.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from loom.serving.settings import ServiceSettings
from loom.testing import ServiceClient, serve
from tests.e2e.test_health import allow_connections
from tests.e2e.tokens import SECRET, token
from tests.scrape import matching, sample, scrape
from tests.waiting import until

MODEL = [Path(__file__).resolve().parent / "models" / "durable_autocommit.loom"]
CHANNEL = "Stock.Bumps"


async def created(client: ServiceClient) -> str:
    r = await client.post("/api/items", json={"name": "lamp"})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def test_requests_are_counted_by_route_template(database_url: str) -> None:
    async with serve(MODEL, database_url) as c:
        first, second = await created(c), await created(c)
        for item in (first, second, first):
            assert (await c.get(f"/api/items/{item}")).status_code == 200
        assert (await c.get("/api/items/not-an-id")).status_code == 422
        assert (await c.get("/nowhere")).status_code == 404
        for path in ("/healthz", "/readyz"):
            assert (await c.get(path)).status_code == 200
        samples = await scrape(c)
        total = "loom_http_requests_total"
        route = "/api/items/{id}"
        assert sample(samples, total, route=route, method="GET", status="200") == 3
        assert sample(samples, total, route=route, method="GET", status="422") == 1
        assert sample(samples, total, route="/api/items", method="POST", status="201") == 2
        assert sample(samples, total, route="unmatched", method="GET", status="404") == 1
        # one series per route template: never the raw path, never the health probes
        routes = {dict(k)["route"] for k in matching(samples, total)}
        assert not any(item in r for r in routes for item in (first, second))
        assert not routes & {"/healthz", "/readyz"}, routes
        duration = "loom_http_request_duration_seconds_count"
        assert sample(samples, duration, route=route, method="GET") == 4
        buckets = matching(samples, "loom_http_request_duration_seconds_bucket", route=route)
        assert max(buckets.values()) == 4  # the +Inf bucket holds every request
        assert sample(samples, "loom_db_pool_in_use") is not None


async def pending(client: ServiceClient) -> tuple[float, float]:
    samples = await scrape(client)
    count = sample(samples, "loom_outbox_pending", channel=CHANNEL)
    age = sample(samples, "loom_outbox_oldest_age_seconds", channel=CHANNEL)
    assert count is not None and age is not None, samples
    return count, age


async def test_the_outbox_lag_rises_while_the_relay_is_stopped_then_falls_to_zero(
    database_url: str,
) -> None:
    async with serve(MODEL, database_url, settle=False) as c:
        assert await pending(c) == (0, 0)
        await c.service.stop_relay()
        item = await created(c)
        for _ in range(3):
            r = await c.post("/api/workflows/bump", json={"item": item})
            assert r.status_code == 204, r.text
        count, age = await pending(c)
        assert count == 3 and age >= 0
        # the lag is the age of the oldest event not delivered: it grows while nothing moves
        await until(
            lambda: _older_than(c, age), timeout=10, what="the outbox lag grows while stopped"
        )
        await c.service.start_relay()
        await until(
            lambda: _drained(c), timeout=20, what="the outbox lag falls to 0 once the relay runs"
        )
        samples = await scrape(c)
        assert sample(samples, "loom_dead_letters", kind="event") == 0


async def _older_than(client: ServiceClient, age: float) -> bool:
    return (await pending(client))[1] > age


async def _drained(client: ServiceClient) -> bool:
    return await pending(client) == (0, 0)


async def test_an_idempotent_replay_is_counted(database_url: str) -> None:
    async with serve(MODEL, database_url) as c:
        headers = {"Idempotency-Key": "k-1"}
        for _ in range(3):
            r = await c.post("/api/items", json={"name": "lamp"}, headers=headers)
            assert r.status_code == 201, r.text
        assert sample(await scrape(c), "loom_idempotency_replays_total") == 2


ADMIN: dict[str, Any] = {"roles": ["admin"]}


async def test_with_tokens_metrics_need_the_admin_role_unless_public(sqlite_url: str) -> None:
    async with serve(MODEL, sqlite_url, settings=ServiceSettings(jwt_secret=SECRET)) as c:
        r = await c.get("/metrics")
        assert r.status_code == 401 and r.json()["type"] == "urn:loom:problem:unauthenticated"
        r = await c.get("/metrics", headers=token())
        assert r.status_code == 403 and r.json()["type"] == "urn:loom:problem:forbidden"
        await scrape(c, **token(**ADMIN))
        assert (await c.get("/healthz")).status_code == 200  # the probes stay open
    public = ServiceSettings(jwt_secret=SECRET, metrics_public=True)
    async with serve(MODEL, sqlite_url, settings=public) as c:
        await scrape(c)


async def test_no_metrics_serves_none(sqlite_url: str) -> None:
    async with serve(MODEL, sqlite_url, settings=ServiceSettings(no_metrics=True)) as c:
        r = await c.get("/metrics")
        assert r.status_code == 404 and r.json()["type"] == "urn:loom:problem:no-such-route"


@pytest.mark.parametrize("value", ["1", "TRUE", "on"])
async def test_the_no_metrics_variable_as_a_flag_reads_it(
    sqlite_url: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_NO_METRICS", value)
    async with serve(MODEL, sqlite_url) as c:
        assert (await c.get("/metrics")).status_code == 404


async def test_checkouts_waiting_for_a_connection_are_counted(database_url: str) -> None:
    one = ServiceSettings(pool_size=1, pool_overflow=0)
    async with serve(MODEL, database_url, settings=one) as c:
        item = await created(c)
        # the relay in the background may have waited already: count from here
        before = sample(await scrape(c), "loom_db_pool_waits_total")
        assert before is not None
        answers = await asyncio.gather(*(c.get(f"/api/items/{item}") for _ in range(8)))
        assert {r.status_code for r in answers} == {200}
        samples = await scrape(c)
        # eight reads at once on one connection: some waited for it
        assert (sample(samples, "loom_db_pool_waits_total") or 0) > before, samples
        assert sample(samples, "loom_db_pool_in_use") == 0  # every one returned


@pytest.mark.postgres
async def test_a_scrape_while_the_database_is_down_still_answers_the_counters(
    postgres_url: str,
) -> None:
    async with serve(MODEL, postgres_url, settle=False) as c:
        await created(c)
        assert sample(await scrape(c), "loom_outbox_pending", channel=CHANNEL) == 0
        await allow_connections(c, False)
        try:
            samples = await scrape(c)  # 200: the database's gauges left out, the rest there
            assert sample(samples, "loom_outbox_pending", channel=CHANNEL) is None
            route = {"route": "/api/items", "method": "POST", "status": "201"}
            assert sample(samples, "loom_http_requests_total", **route) == 1
        finally:
            await allow_connections(c, True)
        await until(
            lambda: _has_gauges(c), timeout=20, what="the gauges are back with the database"
        )


async def _has_gauges(client: ServiceClient) -> bool:
    return sample(await scrape(client), "loom_outbox_pending", channel=CHANNEL) == 0
