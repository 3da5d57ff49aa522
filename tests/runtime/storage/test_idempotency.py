"""`Idempotency-Key` records (`__loom_idempotency`), on every backend, through HTTP against the
runtime sample: the first answer is stored in the commit of its write (a retry after a lost commit
gets it), a retry replays it, the key used for another request is refused, concurrent duplicates
lose the insert race and answer the winner's answer, and keys expire and are pruned.

How the generated routes use the keys (every kind of mutating route, principals, reactions) is
tests/e2e/test_idempotency.py's."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import func, select

from loom.runtime import Service, clock
from loom.runtime.http.idempotency import idempotency_keys

REUSED = "urn:loom:problem:idempotency-key-reused"
START = datetime(2030, 1, 1, tzinfo=UTC)


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


def assert_replayed(r: httpx.Response, first: httpx.Response | None, status: int) -> None:
    assert r.status_code == status, r.text
    assert r.headers["idempotent-replayed"] == "true"
    if first is not None:
        assert r.content == first.content


async def items(client: httpx.AsyncClient) -> int:
    r = await client.get("/api/items")
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


async def count(service: Service) -> int:
    async with service.engine.connect() as conn:
        stmt = select(func.count()).select_from(idempotency_keys)
        return int((await conn.execute(stmt)).scalar_one())


async def test_the_first_answer_is_stored_with_its_write_and_replayed(
    client: httpx.AsyncClient, service: Service
) -> None:
    with clock.frozen(START):
        first = await client.post("/api/items", json={"name": "a"}, headers=keyed("k"))
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers, first.text
    async with service.engine.connect() as conn:
        (row,) = (await conn.execute(select(idempotency_keys))).all()
    assert (row.scope, row.key, row.status, bytes(row.body)) == (
        "anonymous",
        "k",
        200,
        first.content,
    )
    assert json.loads(row.headers) == {"content-type": "application/json"}
    assert row.expires_at == START + service.idempotency.ttl
    assert_replayed(
        await client.post("/api/items", json={"name": "a"}, headers=keyed("k")), first, 200
    )
    assert await items(client) == 1
    # the record commits with the write: a retry after a lost commit answers what it stored
    service.faults.lose_commit()
    lost = await client.post("/api/items", json={"name": "b"}, headers=keyed("lost"))
    assert lost.status_code == 503, lost.text
    retry = await client.post("/api/items", json={"name": "b"}, headers=keyed("lost"))
    assert_replayed(retry, None, 200)
    assert await items(client) == 2 and await count(service) == 2


async def test_a_key_used_for_another_request_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, service: Service
) -> None:
    first = await client.post("/api/items", json={"name": "a"}, headers=keyed("k"))
    assert first.status_code == 200, first.text
    r = await client.post("/api/items", json={"name": "other"}, headers=keyed("k"))
    assert r.status_code == 422 and r.json()["type"] == REUSED, r.text
    assert await items(client) == 1 and await count(service) == 1
    assert_replayed(
        await client.post("/api/items", json={"name": "a"}, headers=keyed("k")), first, 200
    )


async def test_concurrent_duplicates_apply_once_and_answer_alike(
    client: httpx.AsyncClient,
) -> None:
    async with asyncio.timeout(30):
        answers = await asyncio.gather(
            *(client.post("/api/items", json={"name": "x"}, headers=keyed("dup")) for _ in range(6))
        )
    assert {r.status_code for r in answers} == {200}, [r.text for r in answers]
    assert len({r.content for r in answers}) == 1
    assert sum("idempotent-replayed" not in r.headers for r in answers) == 1
    assert await items(client) == 1


async def test_keys_expire_after_the_configured_time(
    client: httpx.AsyncClient, service: Service
) -> None:
    service.idempotency.ttl = timedelta(seconds=60)
    with clock.frozen(START):
        first = await client.post("/api/items", json={"name": "t"}, headers=keyed("t"))
        assert first.status_code == 200, first.text
    with clock.frozen(START + timedelta(seconds=59)):
        assert_replayed(
            await client.post("/api/items", json={"name": "t"}, headers=keyed("t")), first, 200
        )
    assert await items(client) == 1
    with clock.frozen(START + timedelta(seconds=61)):
        r = await client.post("/api/items", json={"name": "t"}, headers=keyed("t"))
        assert r.status_code == 200 and "idempotent-replayed" not in r.headers, r.text
        assert r.content != first.content and await items(client) == 2
        # an expired key is gone; the new one lives another 60 s from now
        assert_replayed(
            await client.post("/api/items", json={"name": "t"}, headers=keyed("t")), r, 200
        )
    assert await count(service) == 1


async def test_expired_keys_are_pruned_in_bounded_batches(
    client: httpx.AsyncClient, service: Service
) -> None:
    service.idempotency.ttl = timedelta(seconds=60)

    async def create(key: str) -> None:
        r = await client.post("/api/items", json={"name": key}, headers=keyed(key))
        assert r.status_code == 200, r.text

    with clock.frozen(START):
        for key in ("a", "b", "c"):
            await create(key)
    assert await count(service) == 3
    with clock.frozen(START + timedelta(seconds=30)):  # not expired, and pruned < 1 min ago
        await create("d")
    assert await count(service) == 4
    with clock.frozen(START + timedelta(seconds=61)):  # a, b, c expired; d lives
        await create("e")
    async with service.engine.connect() as conn:
        left = sorted(r.key for r in await conn.execute(select(idempotency_keys.c.key)))
    assert left == ["d", "e"]
