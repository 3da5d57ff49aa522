"""Durable channels end to end, on SQLite and PostgreSQL, through HTTP against the events sample
service: the outbox row exists iff the write committed, the relay delivers at least once and
retries with backoff, the inbox turns redeliveries into skips, dead letters are kept and redriven.

The relay loop is off in these tests; `service.settle()` runs its rounds until nothing is due, and
the test moves the runtime clock to make retries and expired leases due.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from decimal import Decimal
from uuid import UUID

import pytest

from loom.runtime import Backoff, new_id

from .events_kit import lines, moving_clock, running

LEASE = 60  # seconds: the relay's default lease


async def test_a_transactional_write_that_fails_leaves_no_row_and_no_delivery(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url) as svc:
        product = await svc.product(available=10)
        svc.service.faults.fail_save(2)  # the second order's save, after the first one's event
        with caplog.at_level(logging.INFO, logger="loom.events"):
            r = await svc.client.post(
                "/api/workflows/place_orders", json={"product": str(product), "count": 2}
            )
            assert r.status_code == 500, r.text
            await svc.service.settle()
        assert await svc.outbox_count() == 0
        assert lines(caplog) == []  # no handler ever saw OrderPlaced or BatchPlaced
        assert await svc.stock(product) == (10, 0)


async def test_rows_commit_with_their_write_in_order(database_url: str) -> None:
    async with running(database_url) as svc:
        product = await svc.product(available=10)
        r = await svc.client.post(
            "/api/workflows/place_orders", json={"product": str(product), "count": 3}
        )
        assert r.status_code == 200, r.text
        orders = [UUID(x) for x in r.json()]
        rows = await svc.outbox_rows()
        # aggregate events in save order, then the workflow-level event, all pending
        assert [(x.event_type, x.channel, x.status) for x in rows] == [
            ("Shop.OrderPlaced", "shop", "pending"),
            ("Shop.OrderPlaced", "shop", "pending"),
            ("Shop.OrderPlaced", "shop", "pending"),
            ("Shop.BatchPlaced", "audit", "pending"),
        ]
        assert [UUID(x.payload.split('"order":"')[1][:36]) for x in rows[:3]] == orders
        assert len({x.correlation_id for x in rows}) == 1
        # durable events are not also dispatched in-process: nothing ran yet
        assert await svc.stock(product) == (10, 0)
        await svc.service.settle()
        assert await svc.stock(product) == (7, 3)
        assert all([await svc.order_status(o) == "Reserved" for o in orders])
        # retention work deletes delivered rows; retention log keeps them
        assert [(x.event_type, x.status) for x in await svc.outbox_rows()] == [
            ("Shop.BatchPlaced", "delivered")
        ]


async def test_autocommit_writes_each_row_with_its_outbox_rows(database_url: str) -> None:
    async with running(database_url) as svc:
        product = await svc.product(available=10)
        svc.service.faults.fail_save(2)
        r = await svc.client.post(
            "/api/workflows/place_orders_loose", json={"product": str(product), "count": 2}
        )
        assert r.status_code == 500, r.text
        # the first order committed with its event; the second never did; the block failed, so
        # its workflow-level BatchPlaced was never recorded
        rows = await svc.outbox_rows()
        assert [x.event_type for x in rows] == ["Shop.OrderPlaced"]
        order = UUID(rows[0].payload.split('"order":"')[1][:36])
        assert await svc.order_status(order) == "Pending"
        await svc.service.settle()
        assert await svc.order_status(order) == "Reserved"
        loose = await svc.client.post(
            "/api/workflows/place_order_loose",
            json={"product": str(product), "qty": 1, "total": "2.00"},
        )
        assert loose.status_code == 200
        assert [x.event_type for x in await svc.outbox_rows()] == ["Shop.OrderPlaced"]


async def test_ids_travel_through_the_outbox(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url) as svc:
        product = await svc.product(available=5)
        with caplog.at_level(logging.INFO, logger="loom.events"):
            order = await svc.place(product, headers={"X-Correlation-Id": "cart-7"})
            await svc.service.settle()
        assert await svc.order_status(order) == "Reserved"
        logged = lines(caplog)
        assert {x["correlation_id"] for x in logged} == {"cart-7"}
        dispatched = {x["event_type"]: x for x in lines(caplog, "event_dispatched")}
        placed = dispatched["Shop.OrderPlaced"]
        reserved = dispatched["Stock.StockReserved"]
        assert (placed["channel"], placed["attempt"], placed["causation_id"]) == ("shop", 1, None)
        assert reserved["causation_id"] == placed["event_id"]  # emitted by its handler
        # the in-process OrderReserved, raised in a reaction to StockReserved, continues the chain
        assert dispatched["Shop.OrderReserved"]["causation_id"] == reserved["event_id"]
        assert "channel" not in dispatched["Shop.OrderReserved"]


async def test_payloads_round_trip_exactly(database_url: str) -> None:
    async with running(database_url) as svc:
        product = await svc.product(available=10)
        order = await svc.place(product, total="12345678901234567890.1234567890")
        (row,) = await svc.outbox_rows()
        assert '"total":"12345678901234567890.1234567890"' in row.payload
        seen = []

        async def spy(event: object) -> None:
            seen.append(event)

        from .events_service import OrderPlaced, Priority

        svc.service.events.subscribe(OrderPlaced, spy, name="test.spy")
        await svc.service.settle()
        (event,) = seen
        assert event.order == order  # type: ignore[attr-defined]
        assert event.total == Decimal("12345678901234567890.1234567890")  # type: ignore[attr-defined]
        assert event.lines == [event.total, Decimal("0.00")]  # type: ignore[attr-defined]
        assert str(event.lines[1]) == "0.00"  # type: ignore[attr-defined]
        assert event.priority is Priority.NORMAL  # type: ignore[attr-defined]
        assert event.placed_at.utcoffset() == timedelta(0)  # type: ignore[attr-defined]


async def test_a_crash_before_delivery_is_delivered_after_restart(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with moving_clock() as clock:
        async with running(database_url) as first:
            product = await first.product(available=5)
            order = await first.place(product, qty=2)
            first.service.faults.crash_relay(after="claim")
            await first.service.settle()  # claims the row, then "dies" without marking it
            (row,) = await first.outbox_rows()
            assert row.claimed_by == first.service.relay.name and row.status == "pending"
            assert await first.stock(product) == (5, 0)
        async with running(database_url) as second:  # the restarted process
            await second.service.settle()
            assert await second.stock(product) == (5, 0)  # the dead relay's lease still holds
            clock.advance(LEASE + 1)
            with caplog.at_level(logging.INFO, logger="loom.events"):
                await second.service.settle()
            assert await second.stock(product) == (3, 2)
            assert await second.reservations(product) == [order]
            assert await second.order_status(order) == "Reserved"
            assert await second.outbox_count() == 0
            assert lines(caplog, "event_skipped_duplicate") == []


async def test_a_forced_redelivery_is_skipped_not_applied_twice(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with moving_clock() as clock:
        async with running(database_url) as first:
            product = await first.product(available=5)
            order = await first.place(product, qty=2)
            first.service.faults.crash_relay(after="deliver")
            await first.service.settle()  # every handler ran and committed; nothing was marked
            assert await first.stock(product) == (3, 2)
            placed = (await first.outbox_rows())[0]
            assert placed.event_type == "Shop.OrderPlaced" and placed.status == "pending"
        async with running(database_url) as second:
            clock.advance(LEASE + 1)
            with caplog.at_level(logging.INFO, logger="loom.events"):
                await second.service.settle()  # OrderPlaced again, and the StockReserved it caused
            assert await second.stock(product) == (3, 2)  # applied once
            assert await second.reservations(product) == [order]
            assert await second.order_status(order) == "Reserved"
            skipped = lines(caplog, "event_skipped_duplicate")
            assert sorted((x["handler"], x["event_id"], x["attempt"]) for x in skipped) == [
                ("Shop.Fulfil.start", str(placed.event_id), 1),
                ("Stock.ReserveStock.start", str(placed.event_id), 1),
            ]
            assert await second.outbox_count() == 0


async def test_a_reactor_failing_twice_then_succeeding_applies_once(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with moving_clock() as clock, caplog.at_level(logging.INFO, logger="loom.events"):
        async with running(database_url) as svc:
            product = await svc.product(available=0)
            order = await svc.place(product, qty=1)
            await svc.service.settle()  # attempt 1: insufficient stock
            await svc.service.settle()  # the retry is not due yet: nothing happens
            clock.advance(1.1)  # backoff after attempt 1: 1 s
            await svc.service.settle()  # attempt 2: still short
            restocked = await svc.client.post(f"/api/products/{product}/restock", json={"qty": 1})
            assert restocked.status_code == 204
            clock.advance(1.1)  # after attempt 2: 2 s, not due yet
            await svc.service.settle()
            assert await svc.stock(product) == (1, 0)
            clock.advance(1.0)
            await svc.service.settle()  # attempt 3 delivers
            assert await svc.stock(product) == (0, 1)
            assert await svc.reservations(product) == [order]
            assert await svc.order_status(order) == "Reserved"
            assert await svc.outbox_count() == 0
    failed = lines(caplog, "reactor_failed")
    assert [(x["handler"], x["attempt"], x["error"]) for x in failed] == [
        ("Stock.ReserveStock.start", 1, "Refused: insufficient stock"),
        ("Stock.ReserveStock.start", 2, "Refused: insufficient stock"),
    ]
    retries = lines(caplog, "retry_scheduled")
    assert [(x["attempt"], x["channel"], x["level"]) for x in retries] == [
        (1, "shop", "warning"),
        (2, "shop", "warning"),
    ]
    assert all(x["event_id"] == failed[0]["event_id"] for x in retries)
    assert "insufficient stock" in retries[0]["error"]
    # Fulfil.start succeeded at attempt 1; its two redeliveries were skipped by the inbox
    skipped = lines(caplog, "event_skipped_duplicate")
    assert [(x["handler"], x["attempt"]) for x in skipped] == [
        ("Shop.Fulfil.start", 2),
        ("Shop.Fulfil.start", 3),
    ]


async def test_an_always_failing_reactor_is_dead_lettered_then_redriven(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    no_wait = Backoff(initial=timedelta(0))
    with caplog.at_level(logging.INFO, logger="loom.events"):
        async with running(database_url, max_attempts=3, backoff=no_wait) as svc:
            product = await svc.product(available=0)
            order = await svc.place(product, qty=1, total="12.50")
            await svc.service.settle()  # three attempts, then dead
            (dead,) = lines(caplog, "event_dead_lettered")
            assert dead["attempt"] == 3 and dead["channel"] == "shop"
            assert dead["error"] == "Stock.ReserveStock.start: Refused: insufficient stock"
            assert len(lines(caplog, "retry_scheduled")) == 2

            r = await svc.client.get("/api/admin/dead-letters")
            assert r.status_code == 200, r.text
            body = r.json()
            assert (body["total"], body["limit"], body["offset"]) == (1, 50, 0)
            (item,) = body["items"]
            assert item["event_id"] == dead["event_id"]
            assert item["event_type"] == "Shop.OrderPlaced" and item["channel"] == "shop"
            assert item["attempts"] == 3
            assert item["last_error"] == dead["error"]
            assert item["payload"]["order"] == str(order)
            assert item["payload"]["total"] == "12.50"
            assert item["correlation_id"] == dead["correlation_id"]
            # the dead row stays put: settling again delivers nothing
            await svc.service.settle()
            assert await svc.order_status(order) == "Pending"

            missing = await svc.client.post(f"/api/admin/dead-letters/{new_id()}/redrive")
            assert missing.status_code == 404
            assert missing.headers["content-type"] == "application/problem+json"
            assert missing.json()["type"] == "urn:loom:problem:not-found"

            fixed = await svc.client.post(f"/api/products/{product}/restock", json={"qty": 1})
            assert fixed.status_code == 204
            r = await svc.client.post(f"/api/admin/dead-letters/{item['event_id']}/redrive")
            assert r.status_code == 204 and r.content == b""
            await svc.service.settle()
            assert await svc.order_status(order) == "Reserved"
            assert await svc.reservations(product) == [order]
            assert (await svc.client.get("/api/admin/dead-letters")).json()["total"] == 0
            again = await svc.client.post(f"/api/admin/dead-letters/{item['event_id']}/redrive")
            assert again.status_code == 404
    (redriven,) = lines(caplog, "event_redriven")
    assert redriven["event_id"] == dead["event_id"]
    assert redriven["correlation_id"] == dead["correlation_id"]


async def test_dead_letter_pages(database_url: str) -> None:
    no_wait = Backoff(initial=timedelta(0))
    async with running(database_url, max_attempts=1, backoff=no_wait) as svc:
        product = await svc.product(available=0)
        for _ in range(3):
            await svc.place(product)
        await svc.service.settle()
        page = (await svc.client.get("/api/admin/dead-letters?limit=2&offset=1")).json()
        assert (page["total"], page["limit"], page["offset"], len(page["items"])) == (3, 2, 1, 2)
        everything = await svc.service.outbox.dead_letters()
        assert [x["event_id"] for x in page["items"]] == [str(d.event_id) for d in everything[1:]]
        bad = await svc.client.get("/api/admin/dead-letters?limit=0")
        assert bad.status_code == 422
        assert await svc.service.outbox.redrive_all() == 3
        assert await svc.service.outbox.counts() == {"pending": 3, "delivered": 0, "dead": 0}


async def test_the_relay_loop_delivers_on_its_own(database_url: str) -> None:
    """With the relay running (as in production), a commit wakes it: no settle needed. The
    handler below is the synchronisation point; the timeout only bounds a failure."""
    import asyncio

    from .events_service import StockReserved

    async with running(database_url, relay=True) as svc:
        assert svc.service.relay.running
        done = asyncio.Event()

        async def on_reserved(event: object) -> None:
            done.set()

        svc.service.events.subscribe(StockReserved, on_reserved, name="test.done")
        product = await svc.product(available=1)
        order = await svc.place(product)
        await asyncio.wait_for(done.wait(), timeout=30)
        await svc.service.settle()
        assert await svc.order_status(order) == "Reserved"
    assert not svc.service.relay.running  # the lifespan stopped it


async def test_the_running_relay_retries_after_the_backoff(database_url: str) -> None:
    """No settle, no polling (the relay polls hourly here): the relay wakes itself when the
    retry it scheduled falls due."""
    import asyncio

    from .events_kit import log_waiter
    from .events_service import StockReserved

    quick = Backoff(initial=timedelta(milliseconds=50), factor=1.0)
    options = {"relay": True, "backoff": quick, "max_attempts": 1000}
    async with running(database_url, **options, relay_options={"poll_interval": 3600}) as svc:
        reserved = asyncio.Event()

        async def on_reserved(event: object) -> None:
            reserved.set()

        svc.service.events.subscribe(StockReserved, on_reserved, name="test.reserved")
        product = await svc.product(available=0)
        with log_waiter(event="retry_scheduled", attempt=2) as retried:
            order = await svc.place(product)
            await asyncio.wait_for(retried.seen.wait(), timeout=30)  # it retried by itself
        restocked = await svc.client.post(f"/api/products/{product}/restock", json={"qty": 1})
        assert restocked.status_code == 204
        await asyncio.wait_for(reserved.wait(), timeout=30)
        await svc.service.settle()
        assert await svc.order_status(order) == "Reserved"
        assert await svc.reservations(product) == [order]


async def test_in_autocommit_a_row_and_its_outbox_rows_commit_together(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import func, select

    from loom.runtime.messaging import outbox as _outbox

    from .events_service import orders

    def unwritable(event: object) -> str:
        raise RuntimeError("the outbox write fails")

    async with running(database_url) as svc:
        product = await svc.product(available=5)
        monkeypatch.setattr(_outbox, "encode", unwritable)
        r = await svc.client.post(
            "/api/workflows/place_order_loose",
            json={"product": str(product), "qty": 1, "total": "1.00"},
        )
        assert r.status_code == 500
        async with svc.service.engine.connect() as conn:
            stored = (await conn.execute(select(func.count()).select_from(orders))).scalar()
        assert stored == 0  # the order's INSERT rolled back with its outbox row
        assert await svc.outbox_count() == 0
