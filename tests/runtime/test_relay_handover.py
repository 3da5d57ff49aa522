"""Rows a commit hands its own relay (`Relay.hand_over`), on SQLite and PostgreSQL: written leased
to the running relay in the commit's transaction, delivered from memory with no claim, in commit
order behind any backlog of due rows, given back to the queue when the relay stops, and left
leased (like a claimed row) by a relay that dies holding them."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from uuid import UUID

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints
import pytest

from loom.runtime import DomainEvent, Service, current_envelope
from loom.runtime.messaging.relay import HELD_BATCHES
from tests.waiting import until

from .events_kit import Running, moving_clock, running
from .events_service import OrderPlaced

WAIT = 60  # seconds: bounds a failure only
LEASE = 60  # seconds: the relay's default lease
# a relay that only a hand-over (or a NOTIFY) can bring a row to within a test
QUIET: dict[str, Any] = {"relay": True, "relay_options": {"poll_interval": 3600}}


class Gate:
    """A reaction to OrderPlaced that records the order ids it saw, in order, and holds the
    relay's round on the first one until `open`."""

    def __init__(self, service: Service) -> None:
        self.seen: list[UUID] = []
        self.held = asyncio.Event()
        self.gate = asyncio.Event()

        async def gate(event: DomainEvent) -> None:
            assert current_envelope() is not None
            self.seen.append(event.order)  # type: ignore[attr-defined]
            if len(self.seen) == 1:
                self.held.set()
                await self.gate.wait()

        service.events.subscribe(OrderPlaced, gate, name="test.gate")

    def open(self) -> None:
        self.gate.set()


async def taking_commits(svc: Running) -> None:
    """Until the started relay's first claim came back short: commits are handed over from then."""
    relay = svc.service.relay
    await until(lambda: relay.lease_for_commit() is not None, timeout=WAIT, what="relay ready")


async def placed_rows(svc: Running) -> dict[UUID, Any]:
    """Order id -> its OrderPlaced outbox row."""
    rows = [r for r in await svc.outbox_rows() if r.event_type == "Shop.OrderPlaced"]
    return {UUID(json.loads(r.payload)["order"]): r for r in rows}


async def one_held_one_handed(svc: Running) -> tuple[Gate, UUID, UUID]:
    """Once the relay takes commits: an order whose delivery the gate holds, then a second one,
    committed while the relay is busy with the first."""
    await taking_commits(svc)
    gate = Gate(svc.service)
    product = await svc.product(available=10)
    first = await svc.place(product)
    await asyncio.wait_for(gate.held.wait(), WAIT)
    return gate, first, await svc.place(product)


async def test_a_commit_hands_its_rows_to_its_relay_leased(database_url: str) -> None:
    async with running(database_url, **QUIET) as svc:
        relay = svc.service.relay
        gate, first, second = await one_held_one_handed(svc)
        # written by the commit, before any claim could reach it: leased to this relay
        row = (await placed_rows(svc))[second]
        print(f"second row: claimed_by {row.claimed_by}, attempts {row.attempts}")
        assert (row.claimed_by, row.status, row.attempts) == (relay.name, "pending", 0)
        assert row.claimed_until is not None
        gate.open()
        await svc.service.settle()
        assert gate.seen == [first, second]
        assert await svc.order_status(second) == "Reserved"
        assert await placed_rows(svc) == {}


async def test_a_full_hand_sends_commits_to_the_queue_and_order_holds(database_url: str) -> None:
    options = {"relay": True, "relay_options": {"poll_interval": 3600, "batch_size": 1}}
    async with running(database_url, **options) as svc:
        relay = svc.service.relay
        await taking_commits(svc)
        gate = Gate(svc.service)
        product = await svc.product(available=100)
        orders = [await svc.place(product)]
        await asyncio.wait_for(gate.held.wait(), WAIT)
        for _ in range(HELD_BATCHES + 2):
            orders.append(await svc.place(product))
        rows = await placed_rows(svc)
        leased = [o for o in orders[1:] if rows[o].claimed_by == relay.name]
        due = [o for o in orders[1:] if rows[o].claimed_by is None]
        # the hand also holds what `first`'s reactions committed (before the gate held it)
        held = sum(r.claimed_by == relay.name for r in await svc.outbox_rows()) - 1
        print(f"held by the relay {held} ({len(leased)} orders), orders written due {len(due)}")
        assert held == HELD_BATCHES
        assert leased + due == orders[1:] and len(due) >= 2  # the first ones held, then due
        gate.open()
        await until(lambda: len(gate.seen) == len(orders), timeout=WAIT, what="every order")
        await svc.service.settle()
        assert gate.seen == orders  # the handed rows first, then the queue's, in commit order
        assert await placed_rows(svc) == {}
        assert relay.lease_for_commit() is not None  # the queue drained: taking commits again


async def test_a_stopping_relay_gives_its_handed_rows_back(database_url: str) -> None:
    async with running(database_url, **QUIET) as svc:
        relay = svc.service.relay
        gate, first, second = await one_held_one_handed(svc)
        assert (await placed_rows(svc))[second].claimed_by == relay.name
        await relay.stop(timeout=0.2)  # the round held on `first` is cut short
        rows = await placed_rows(svc)
        print(f"after stop: first {rows[first].claimed_by}, second {rows[second].claimed_by}")
        assert rows[first].claimed_by == relay.name  # claimed mid-round: its lease holds
        assert (rows[second].claimed_by, rows[second].status) == (None, "pending")
        gate.open()
        await svc.service.settle()  # the given-back row is due at once
        assert gate.seen == [first, second]


async def test_a_relay_dying_with_handed_rows_leaves_them_leased(database_url: str) -> None:
    with moving_clock() as clock:
        async with running(database_url, **QUIET) as first:
            await taking_commits(first)
            product = await first.product(available=5)
            first.service.faults.crash_relay(after="claim")
            order = await first.place(product, qty=2)
            await until(lambda: not first.service.relay.running, timeout=WAIT, what="crashed")
            row = (await placed_rows(first))[order]
            assert (row.claimed_by, row.status) == (first.service.relay.name, "pending")
            assert await first.stock(product) == (5, 0)
        async with running(database_url) as second:  # the restarted process
            await second.service.settle()
            assert await second.stock(product) == (5, 0)  # the dead relay's lease still holds
            clock.advance(LEASE + 1)
            await second.service.settle()
            assert await second.stock(product) == (3, 2)
            assert await second.order_status(order) == "Reserved"
            assert await second.outbox_count() == 0


@pytest.mark.postgres
async def test_handed_rows_wake_no_other_relay(postgres_url: str) -> None:
    """A NOTIFY is for rows any relay may claim: rows leased to their own relay send none. After
    the commit, a marker NOTIFY: the outbox's would have arrived before it."""
    async with running(postgres_url, **QUIET) as svc, running(postgres_url) as off:
        await taking_commits(svc)
        plain = postgres_url.replace("postgresql+asyncpg://", "postgresql://")
        listening = await asyncpg.connect(plain)
        heard: list[str] = []
        marker = asyncio.Event()

        def on(_conn: Any, _pid: int, _channel: str, payload: str) -> None:
            heard.append(payload)
            if payload == "marker":
                marker.set()

        try:
            await listening.add_listener("loom_outbox", on)
            product = await off.product(available=10)
            await svc.place(product)  # handed to svc's relay
            await off.place(product)  # no relay running in `off`: due, for any relay
            await listening.execute("SELECT pg_notify('loom_outbox', 'marker')")
            await asyncio.wait_for(marker.wait(), WAIT)
        finally:
            await listening.close()
        print(f"heard {heard}")
        assert heard == ["", "marker"]  # the due row's NOTIFY only
        await svc.service.settle()
