"""transaction() vs autocommit(): what commits, and when events are dispatched."""

from __future__ import annotations

import json
import logging
from typing import Any
from uuid import UUID

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.pool import QueuePool

from loom.runtime import DomainEvent, Service, current_envelope

from .sample_service import Incremented, Item, ItemId, Items, PairBumped, items


async def create(client: httpx.AsyncClient, name: str, count: int = 0) -> ItemId:
    r = await client.post("/api/items", json={"name": name, "count": count})
    assert r.status_code == 200, r.text
    return ItemId(UUID(r.json()))


async def committed_counts(service: Service) -> dict[UUID, int]:
    """Read through a separate connection: what other clients see."""
    async with service.engine.connect() as conn:
        rows = (await conn.execute(select(items.c.id, items.c.count))).all()
        await conn.rollback()
    return dict(rows)


def record(service: Service) -> list[DomainEvent]:
    seen: list[DomainEvent] = []

    async def handler(event: DomainEvent) -> None:
        seen.append(event)

    service.events.subscribe(DomainEvent, handler)
    return seen


async def test_transaction_failure_commits_nothing_and_dispatches_nothing(
    client: httpx.AsyncClient, service: Service
) -> None:
    a, b = await create(client, "a"), await create(client, "b")
    seen = record(service)
    service.faults.fail_save(2)
    r = await client.post("/api/workflows/pair", json={"first": str(a), "second": str(b), "by": 1})
    assert r.status_code == 500, r.text
    assert r.json()["type"] == "urn:loom:problem:internal"
    assert (await committed_counts(service)) == {a: 0, b: 0}
    assert seen == []
    assert not service.faults.armed


async def test_autocommit_failure_keeps_earlier_saves_and_their_events(
    client: httpx.AsyncClient, service: Service
) -> None:
    a, b = await create(client, "a"), await create(client, "b")
    seen = record(service)
    service.faults.fail_save(2)
    r = await client.post(
        "/api/workflows/loose_pair", json={"first": str(a), "second": str(b), "by": 1}
    )
    assert r.status_code == 500, r.text
    assert (await committed_counts(service)) == {a: 1, b: 0}
    assert seen == [Incremented(item=a, by=1)]  # the workflow-level event is never dispatched


async def test_events_after_commit_in_order_aggregate_then_workflow(
    client: httpx.AsyncClient, service: Service
) -> None:
    a, b = await create(client, "a"), await create(client, "b")
    seen: list[tuple[DomainEvent, dict[UUID, int]]] = []

    async def handler(event: DomainEvent) -> None:
        seen.append((event, await committed_counts(service)))

    service.events.subscribe(Incremented, handler)
    service.events.subscribe(PairBumped, handler)
    r = await client.post("/api/workflows/pair", json={"first": str(a), "second": str(b), "by": 3})
    assert r.status_code == 200 and r.json() == 3
    assert [e for e, _ in seen] == [
        Incremented(item=a, by=3),
        Incremented(item=b, by=3),
        PairBumped(first=a, second=b),
    ]
    # every handler, even the first, already sees both rows committed
    assert all(counts == {a: 3, b: 3} for _, counts in seen)


async def test_autocommit_dispatches_each_save_right_after_its_commit(
    client: httpx.AsyncClient, service: Service
) -> None:
    a, b = await create(client, "a"), await create(client, "b")
    seen: list[tuple[str, dict[UUID, int]]] = []

    async def handler(event: Any) -> None:
        seen.append((event.event_type, await committed_counts(service)))

    service.events.subscribe(Incremented, handler)
    service.events.subscribe(PairBumped, handler)
    r = await client.post(
        "/api/workflows/loose_pair", json={"first": str(a), "second": str(b), "by": 2}
    )
    assert r.status_code == 200, r.text
    assert seen == [
        ("Incremented", {a: 2, b: 0}),
        ("Incremented", {a: 2, b: 2}),
        ("PairBumped", {a: 2, b: 2}),
    ]


async def test_refusal_rolls_back_and_drops_buffered_events(
    client: httpx.AsyncClient, service: Service
) -> None:
    a = await create(client, "a")
    b = await create(client, "b", count=1_000_000)  # its increment breaks the invariant
    seen = record(service)
    r = await client.post("/api/workflows/pair", json={"first": str(a), "second": str(b), "by": 1})
    assert r.status_code == 422 and r.json()["rule"] == "Item: invariant count <= 1000000"
    assert (await committed_counts(service)) == {a: 0, b: 1_000_000}
    assert seen == []


async def test_failing_reactor_is_logged_and_never_changes_the_answer(
    client: httpx.AsyncClient, service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    a = await create(client, "a")
    envelopes = []

    async def broken(event: DomainEvent) -> None:
        envelopes.append(current_envelope())
        raise ValueError("reactor exploded")

    later: list[DomainEvent] = []

    async def fine(event: DomainEvent) -> None:
        later.append(event)

    service.events.subscribe(Incremented, broken)
    service.events.subscribe(Incremented, fine)
    with caplog.at_level(logging.ERROR, logger="loom.events"):
        r = await client.post(f"/api/items/{a}/increment", json={"by": 1})
    assert r.status_code == 204
    assert later == [Incremented(item=a, by=1)]
    (envelope,) = envelopes
    assert envelope is not None
    assert envelope.event_id.version == 7 and envelope.event_type == "Incremented"
    lines = [json.loads(rec.getMessage()) for rec in caplog.records if rec.name == "loom.events"]
    assert lines == [
        {
            "level": "error",
            "event": "reactor_failed",
            "handler": lines[0]["handler"],
            "event_type": "Incremented",
            "event_id": str(envelope.event_id),
            "correlation_id": r.headers["x-correlation-id"],
            "causation_id": None,
            "error": "ValueError: reactor exploded",
            # a hand-built service has no model revision
            "model_revision": "unknown",
            "reader_revision": "unknown",
        }
    ]
    assert "broken" in lines[0]["handler"]
    assert (await committed_counts(service)) == {a: 1}


async def test_isolation_levels(service: Service) -> None:
    item = Item(name="iso")
    for level in (None, "read_committed", "repeatable_read", "serializable"):
        async with service.transaction(level) as work:
            repo = Items(work)
            if item._loom_version == 0:
                await repo.save(item)
            else:
                loaded = await repo.get_by_id(item.id)
                loaded.increment(1)
                await repo.save(loaded)
    assert (await committed_counts(service)) == {item.id: 3}
    with pytest.raises(ValueError):
        service.transaction("snapshot")


async def test_faults_count_within_the_unit_of_work_that_reaches_them(service: Service) -> None:
    service.faults.fail_save(2, error=KeyError("boom"))
    async with service.autocommit() as work:  # one save: does not reach the fault
        await Items(work).save(Item(name="one"))
    assert service.faults.armed
    with pytest.raises(KeyError):
        async with service.autocommit() as work:
            await Items(work).save(Item(name="two"))
            await Items(work).save(Item(name="three"))
    assert not service.faults.armed
    service.faults.fail_save(1)
    service.faults.clear()
    async with service.autocommit() as work:
        await Items(work).save(Item(name="four"))
    assert sorted(i.name for i in (await _all(service))) == ["four", "one", "two"]


async def _all(service: Service) -> list[Item]:
    async with service.autocommit() as work:
        return (await Items(work).page(100, 0)).items


async def test_a_transaction_holds_one_connection(service: Service) -> None:
    async with service.transaction() as work:
        first = await work.connection()
        await Items(work).save(Item(name="one"))
        await Items(work).save(Item(name="two"))
        assert await work.connection() is first
        assert first.in_transaction()
    pool = service.engine.pool
    assert isinstance(pool, QueuePool) and pool.checkedout() == 0


async def test_workflow_events_wait_for_a_clean_exit_in_autocommit(service: Service) -> None:
    seen = record(service)
    with pytest.raises(RuntimeError):
        async with service.autocommit() as work:
            work.emit(PairBumped(first=Item(name="x").id, second=Item(name="y").id))
            raise RuntimeError("body failed")
    assert seen == []
    item = Item(name="z")
    async with service.autocommit() as work:
        work.emit(PairBumped(first=item.id, second=item.id))
        item.increment(1)
        await Items(work).save(item)
        assert seen == [Incremented(item=item.id, by=1)]  # aggregate event: right after commit
    assert seen == [Incremented(item=item.id, by=1), PairBumped(first=item.id, second=item.id)]
