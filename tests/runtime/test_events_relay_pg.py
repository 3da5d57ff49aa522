"""The relay with several replicas, on PostgreSQL: SKIP LOCKED claims, LISTEN/NOTIFY wake-ups
across services, and a relay that outlives dropped connections. Each "replica" is a second app
with its own Service and engine on the same database, as two processes would be."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import func, select, text

from loom.runtime import DomainEvent, Service, current_envelope
from tests.waiting import until

from .events_kit import lines, log_waiter, moving_clock, running
from .events_service import OrderPlaced, StockReserved, orders, reservations

pytestmark = pytest.mark.postgres
WAIT = 120  # seconds: bounds a failure only; success returns as soon as the handlers ran


class Probe:
    """A handler that records which replica ran it for which event, and signals at a count."""

    def __init__(self, target: int) -> None:
        self.calls: list[tuple[str, str]] = []
        self.target = target
        self.reached = asyncio.Event()

    def attach(self, service: Service, label: str) -> None:
        async def probe(event: DomainEvent) -> None:
            envelope = current_envelope()
            assert envelope is not None
            self.calls.append((label, str(envelope.event_id)))
            if len(self.calls) >= self.target:
                self.reached.set()

        service.events.subscribe(OrderPlaced, probe, name="test.probe")
        service.events.subscribe(StockReserved, probe, name="test.probe")


async def test_two_relays_apply_1000_events_exactly_once(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    options: dict[str, Any] = {"relay": True, "relay_options": {"batch_size": 10}}
    probe = Probe(target=2000)  # 1000 OrderPlaced, and the 1000 StockReserved they cause
    with caplog.at_level(logging.INFO, logger="loom.events"):
        async with running(postgres_url, **options) as a, running(postgres_url, **options) as b:
            probe.attach(a.service, "a")
            probe.attach(b.service, "b")
            product = await a.product(available=1000)
            for i in range(10):
                writer = a if i % 2 == 0 else b
                r = await writer.client.post(
                    "/api/workflows/place_orders", json={"product": str(product), "count": 100}
                )
                assert r.status_code == 200, r.text
            await asyncio.wait_for(probe.reached.wait(), timeout=WAIT)
            await a.service.settle()
            await b.service.settle()
            assert await a.stock(product) == (0, 1000)
            async with a.service.engine.connect() as conn:
                held = (
                    await conn.execute(select(func.count(reservations.c.order.distinct())))
                ).scalar()
                by_status: dict[str, int] = dict(
                    (
                        await conn.execute(
                            select(orders.c.status, func.count()).group_by(orders.c.status)
                        )
                    ).all()
                )
            assert held == 1000
            assert by_status == {"Reserved": 1000}
            assert await a.outbox_count() == 10  # the audit channel's BatchPlaced rows (log)
    per_event = Counter(event_id for _, event_id in probe.calls)
    assert len(per_event) == 2000 and set(per_event.values()) == {1}  # never twice
    by_relay = Counter(label for label, _ in probe.calls)
    assert by_relay["a"] > 0 and by_relay["b"] > 0  # both replicas took part
    assert lines(caplog, "event_skipped_duplicate", "reactor_failed", "relay_error") == []


async def test_notify_wakes_a_relay_in_another_service(postgres_url: str) -> None:
    # B polls once an hour: only LISTEN/NOTIFY can bring it A's commits within the test
    slow = {"relay": True, "relay_options": {"poll_interval": 3600}}
    async with running(postgres_url, **slow) as b, running(postgres_url, relay=False) as a:
        assert b.service.relay.listening and not a.service.relay.running
        probe = Probe(target=2)
        probe.attach(b.service, "b")
        product = await a.product(available=5)
        order = await a.place(product)
        await asyncio.wait_for(probe.reached.wait(), timeout=WAIT)
        await b.service.settle()
        assert await a.order_status(order) == "Reserved"
        assert {label for label, _ in probe.calls} == {"b"}


async def _kill_other_connections(service: Service) -> int:
    """Terminate every connection to the database but the one asking."""
    async with service.engine.connect() as conn:
        killed = await conn.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
        return int(killed.scalar_one())


async def test_listen_comes_back_after_its_connection_drops(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    slow = {"relay": True, "relay_options": {"poll_interval": 3600}}
    with caplog.at_level(logging.INFO, logger="loom.events"):
        async with running(postgres_url, **slow) as b, running(postgres_url, relay=False) as a:
            await b.service.relay.wait_listening()
            with log_waiter(event="relay_error", error="LISTEN connection lost") as lost:
                assert await _kill_other_connections(a.service) >= 1
                await asyncio.wait_for(lost.seen.wait(), timeout=WAIT)
            await asyncio.wait_for(b.service.relay.wait_listening(), timeout=WAIT)
            probe = Probe(target=2)
            probe.attach(b.service, "b")
            product = await a.product(available=5)
            order = await a.place(product)  # only a NOTIFY can wake B (it polls hourly)
            await asyncio.wait_for(probe.reached.wait(), timeout=WAIT)
            await b.service.settle()
            assert await a.order_status(order) == "Reserved"
            assert b.service.relay.running


async def test_a_round_that_loses_its_connection_is_logged_and_retried(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    one_by_one = {"relay": True, "relay_options": {"batch_size": 1, "poll_interval": 3600}}
    with moving_clock() as clock, caplog.at_level(logging.INFO, logger="loom.events"):
        async with running(postgres_url, **one_by_one) as b, running(postgres_url) as a:
            killed, reserved = asyncio.Event(), asyncio.Event()

            async def kill(event: DomainEvent) -> None:
                # runs inside B's round, after the real reactions, before the row is marked:
                # the mark meets a dead pooled connection
                if not killed.is_set():
                    killed.set()
                    await _kill_other_connections(a.service)

            async def on_reserved(event: DomainEvent) -> None:
                reserved.set()

            b.service.events.subscribe(OrderPlaced, kill, name="test.kill")
            b.service.events.subscribe(StockReserved, on_reserved, name="test.reserved")
            product = await a.product(available=5)
            order = await a.place(product)
            # the loop logged the failed round, went on, and delivered the next row
            await asyncio.wait_for(reserved.wait(), timeout=WAIT)
            assert b.service.relay.running
            (failed_round, *_) = [e for e in lines(caplog, "relay_error") if "relay" in e]
            assert failed_round["relay"] == b.service.relay.name
            assert failed_round["attempt"] == 1 and failed_round["level"] == "error"
            placed = [r for r in await a.outbox_rows() if r.event_type == "Shop.OrderPlaced"]
            assert [r.claimed_by for r in placed] == [b.service.relay.name]  # never marked
            # its lease expires; the redelivery is skipped by the inbox of each reaction
            clock.advance(61)

            # B's loop, woken after its failed round's pause, may hold the row's new lease
            # while A settles: A skips it then, and B marks it once delivered
            async def drained() -> bool:
                await a.service.settle()
                return await a.outbox_count() == 0

            await until(drained, timeout=WAIT, what="the outbox drained")
            assert await a.stock(product) == (4, 1)
            assert await a.order_status(order) == "Reserved"
    skipped = {e["handler"] for e in lines(caplog, "event_skipped_duplicate")}
    assert skipped == {"Shop.Fulfil.start", "Stock.ReserveStock.start"}
