"""No unit of work needs two pooled connections at once, and no request waits on a lock while
holding one (tests/e2e/models/durable_autocommit.loom), on SQLite and PostgreSQL.

A non-transactional workflow whose save raises a durable event used to keep its connection while
the save's short transaction took a second one (and, on SQLite, the writer lock first): with more
requests in flight than the pool holds (5 + 10 overflow by default), every request held one
connection and waited for another, so PostgreSQL answered `503 overloaded` after the pool timeout
and SQLite hung. The same held for an in-process reaction run while the saving request still held
its connection. Each test bounds its own run time, so a deadlock fails instead of hanging.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loom.testing import ServiceClient, serve

MODEL = [Path(__file__).resolve().parent / "models" / "durable_autocommit.loom"]
CLIENTS = 40  # well over the pool's 15 connections
ROUNDS = 3
BOUND_S = 25.0  # far below the pool timeout (30 s) that used to end the deadlock with 503s


@pytest.fixture
async def stock(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url, settle=False) as client:
        yield client


async def items(c: ServiceClient, n: int) -> list[str]:
    ids = []
    for i in range(n):
        r = await c.post("/api/items", json={"name": f"item {i}"})
        assert r.status_code == 201, r.text
        ids.append(str(r.json()["id"]))
    return ids


async def hammer(c: ServiceClient, path: str, ids: list[str]) -> list[int]:
    """CLIENTS concurrent clients, ROUNDS requests each, every client on its own item except that
    pairs share one (so some requests lose a race: 409)."""

    async def client(k: int) -> list[int]:
        statuses = []
        for _ in range(ROUNDS):
            r = await c.post(path, json={"item": ids[k // 2]})
            statuses.append(r.status_code)
        return statuses

    async with asyncio.timeout(BOUND_S):
        done = await asyncio.gather(*(client(k) for k in range(CLIENTS)))
    return [s for statuses in done for s in statuses]


async def counts(c: ServiceClient, ids: list[str], field: str) -> int:
    total = 0
    for id in ids:
        r = await c.get(f"/api/items/{id}")
        assert r.status_code == 200, r.text
        total += int(r.json()[field])
    return total


async def test_durable_saves_of_autocommit_workflows_never_exhaust_the_pool(
    stock: ServiceClient,
) -> None:
    ids = await items(stock, CLIENTS // 2)
    statuses = await hammer(stock, "/api/workflows/bump", ids)
    assert set(statuses) <= {204, 409}, sorted(set(statuses))
    assert statuses.count(204) >= CLIENTS  # conflicts are the exception, not the rule
    # every answered bump committed its row and its outbox row together
    assert await counts(stock, ids, "count") == statuses.count(204)
    async with asyncio.timeout(BOUND_S):
        await stock.settle()
    counts_by_status = await stock.service.outbox.counts()
    assert counts_by_status["delivered"] == statuses.count(204)


async def test_in_process_reactions_after_autocommit_saves_never_exhaust_the_pool(
    stock: ServiceClient,
) -> None:
    ids = await items(stock, CLIENTS // 2)
    statuses = await hammer(stock, "/api/workflows/look", ids)
    assert set(statuses) <= {204, 409}, sorted(set(statuses))
    assert statuses.count(204) >= CLIENTS
    assert await counts(stock, ids, "seen") == statuses.count(204)
    folded = 0
    for id in ids:
        r = await stock.get(f"/api/projections/looks/{id}")
        if r.status_code == 200:
            folded += int(r.json()["count"])
    # a reaction that lost its own race is logged, never fails the request: at most as many
    assert 0 < folded <= statuses.count(204)
