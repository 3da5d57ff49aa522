"""Per-key order across two replicas of one consuming deployable (same database, one durable
consumer): Orders commits notes for a few orders; two Inventory replicas fetch them, each some,
and apply each order's notes in commit order. Also the ways out of a wait: a consumer with no
progress for a key (the gap limit), a dead-lettered event in the middle, and an event arriving
after its key moved on (applied late, never dropped)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest

from loom.testing import ServiceClient, settle_all
from tests.waiting import until

from .conftest import INVENTORY, ORDERS, Topology, facts
from .test_topology import RESERVE, items, ok, place, stock

NOTES = "Inventory.keepNotes.on(Orders.OrderNoted)"
# small fetches, so both replicas take messages of every key
SPLIT = {"batch": 2, "gap_limit": 0.3}


def notes_subscriber(
    main: Any, seen: list[tuple[int, str, int]], replica: int, before: Callable[[Any], Any] | None
) -> Callable[[Any], None]:
    """Inventory's reactions; keepNotes records (replica, order, seq) of each note it was handed
    and first runs `before(event)` (a delay, a failure, a wait)."""

    def subscribe(service: Any) -> None:
        inner = main.inventory_reactions.keep_notes_on_order_noted

        async def keep(e: Any) -> None:
            seen.append((replica, str(e.order), e.seq))
            if before is not None:
                await before(e)
            await inner(service, e)

        service.events.subscribe(
            main.orders_domain.OrderPlaced,
            lambda e: main.inventory_reactions.reserve_stock_on_order_placed(service, e),
            name=RESERVE,
        )
        service.events.subscribe(main.orders_domain.OrderNoted, keep, name=NOTES)

    return subscribe


async def applied_notes(inventory: ServiceClient, keys: list[str]) -> dict[str, list[int]]:
    """Each order's notes in the order they were applied (a note's id is a UUIDv7, created in
    the reaction's transaction)."""
    notes = sorted(await items(inventory, "/api/notes"), key=lambda n: n["id"])
    return {key: [n["seq"] for n in notes if n["order"] == key] for key in keys}


async def note(orders: ServiceClient, order: str, seq: int) -> None:
    await ok(await orders.post(f"/api/orders/{order}/note", json={"seq": seq}), 204)


async def replicas(
    main: Any,
    topology: Topology,
    url: str,
    seen: list[tuple[int, str, int]],
    befores: tuple[Callable[[Any], Any] | None, ...],
    options: dict[str, Any],
) -> list[ServiceClient]:
    out = []
    for i, before in enumerate(befores):
        subscribe = notes_subscriber(main, seen, i, before)
        client = await topology.start(INVENTORY, url, subscribe=subscribe, consumer_options=options)
        out.append(client)
    return out


def out_of_order(applied: dict[str, list[int]]) -> int:
    return sum(1 for seqs in applied.values() for a, b in pairwise(seqs) if b < a)


async def test_two_replicas_apply_each_keys_events_in_commit_order(
    main: Any, topology: Topology, two_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[int, str, int]] = []
    # every note waits until all are committed, so both replicas fetch (and hold) notes of every
    # key before any is applied; then a little jitter widens the window in which they race
    posted = asyncio.Event()

    async def jitter(_e: Any) -> None:
        await posted.wait()
        await asyncio.sleep(random.uniform(0, 0.004))

    orders = await topology.start(ORDERS, two_urls[0])
    # a gap limit longer than the posting takes: a replica's first note of a key waits meanwhile;
    # few notes held at once, so that a loaded machine cannot let one replica fetch them all
    split = {**SPLIT, "gap_limit": 20.0, "max_in_flight": 4}
    inventory = await replicas(main, topology, two_urls[1], seen, (jitter, jitter), split)
    await stock(inventory[0], "lamp")
    keys = [await place(orders) for _ in range(4)]
    per_key = 12

    async def commit_notes(key: str) -> None:
        for seq in range(1, per_key + 1):
            await note(orders, key, seq)

    await asyncio.gather(*(commit_notes(key) for key in keys))
    posted.set()
    await settle_all([orders, *inventory], timeout=30.0)
    applied = await applied_notes(inventory[0], keys)
    handled = [sum(1 for r, _, _ in seen if r == i) for i in (0, 1)]
    shared = sum(1 for key in keys if len({r for r, k, _ in seen if k == key}) == 2)
    gaps = facts(caplog, "event_order_gap")
    print(
        f"events {len(keys) * per_key} ({len(keys)} keys); notes handed per replica {handled} (a wait again included); "
        f"keys handled by both replicas {shared}; out of order {out_of_order(applied)}; "
        f"gaps {len(gaps)}"
    )
    assert applied == {key: list(range(1, per_key + 1)) for key in keys}
    assert all(handled), "both replicas took notes"
    assert shared, "some key's notes went to both replicas"
    assert gaps == []
    assert facts(caplog, "event_applied_late") == []


async def test_a_consumer_with_no_progress_applies_after_the_gap_limit(
    main: Any, topology: Topology, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Inventory applies notes 1-3, then starts over on a new database: its durable consumer
    on the broker is past them, and its progress is gone. Note 4 waits the gap limit once, then
    is applied (`event_order_gap`); note 5 follows at once."""
    urls = [f"sqlite+aiosqlite:///{tmp_path / name}" for name in ("o.db", "i1.db", "i2.db")]
    seen: list[tuple[int, str, int]] = []
    orders = await topology.start(ORDERS, urls[0])
    (first,) = await replicas(main, topology, urls[1], seen, (None,), SPLIT)
    await stock(first, "lamp")
    key = await place(orders)
    for seq in (1, 2, 3):
        await note(orders, key, seq)
    await settle_all([orders, first])
    await topology.stop(first)

    (later,) = await replicas(main, topology, urls[2], seen, (None,), SPLIT)
    started = time.monotonic()
    await note(orders, key, 4)
    await settle_all([orders, later])
    waited = time.monotonic() - started
    await note(orders, key, 5)
    await settle_all([orders, later])
    gaps = facts(caplog, "event_order_gap", handler=NOTES)
    print(
        f"gaps {len(gaps)} (missing {gaps[0]['missing'] if gaps else None}), waited {waited:.2f}s"
    )
    assert await applied_notes(later, [key]) == {key: [4, 5]}
    assert len(gaps) == 1 and gaps[0]["key"] == key
    assert gaps[0]["missing"] == {"Orders.OrderNoted": 3}
    assert waited >= SPLIT["gap_limit"]


async def test_a_dead_lettered_event_does_not_block_its_key(
    main: Any, topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[int, str, int]] = []

    async def poisoned(e: Any) -> None:
        if e.seq == 2:
            raise RuntimeError("injected: note 2 never applies")

    orders = await topology.start(ORDERS, sqlite_urls[0])
    inventory = await replicas(main, topology, sqlite_urls[1], seen, (poisoned, poisoned), SPLIT)
    await stock(inventory[0], "lamp")
    key = await place(orders)
    for seq in range(1, 6):
        await note(orders, key, seq)
    await settle_all([orders, *inventory])
    dead = await ok(await inventory[0].get("/api/admin/dead-letters"))
    applied = await applied_notes(inventory[0], [key])
    gaps = facts(caplog, "event_order_gap")
    print(f"applied {applied[key]}; dead letters {dead['total']}; gaps {len(gaps)}")
    assert applied == {key: [1, 3, 4, 5]}
    assert [d["payload"]["seq"] for d in dead["items"]] == [2]
    assert gaps == []


@pytest.mark.parametrize("held", [2, 1])
async def test_an_event_arriving_after_its_key_moved_on_is_applied_late(
    main: Any,
    topology: Topology,
    sqlite_urls: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
    held: int,
) -> None:
    """Replica 0 holds note `held` (its reaction waits); replica 1 gets the next note, waits the
    gap limit and applies it; then the held note is applied, late, not dropped. Held note 1 is
    its key's first event, whose turn is taken by the progress upsert alone."""
    seen: list[tuple[int, str, int]] = []
    release = asyncio.Event()

    async def hold(e: Any) -> None:
        if e.seq == held:
            await release.wait()

    one_each = {**SPLIT, "max_in_flight": 1}  # replica 0, holding its note, fetches nothing more
    orders = await topology.start(ORDERS, sqlite_urls[0])
    (first,) = await replicas(main, topology, sqlite_urls[1], seen, (hold,), one_each)
    await stock(first, "lamp")
    key = await place(orders)
    for seq in range(1, held + 1):
        await note(orders, key, seq)
    await until(lambda: (0, key, held) in seen, timeout=10, what=f"note {held} at replica 0")
    second = await topology.start(
        INVENTORY,
        sqlite_urls[1],
        subscribe=notes_subscriber(main, seen, 1, None),
        consumer_options=one_each,
    )
    await note(orders, key, held + 1)
    await until(  # the ones before, and next
        lambda: len(facts(caplog, "event_handled", handler=NOTES)) >= held,
        timeout=10,
        what=f"note {held + 1} applied",
    )
    release.set()
    await settle_all([orders, first, second])
    applied = await applied_notes(first, [key])
    gaps = facts(caplog, "event_order_gap", handler=NOTES)
    late = facts(caplog, "event_applied_late", handler=NOTES)
    print(f"applied {applied[key]}; gaps {len(gaps)}; late {len(late)}; seen {seen}")
    assert applied == {key: [*range(1, held), held + 1, held]}
    assert [(r, s) for r, _, s in seen if s == held + 1] == [(1, held + 1)]
    assert len(gaps) == 1 and len(late) == 1
    assert gaps[0]["missing"] == {"Orders.OrderNoted": 1} and late[0]["key"] == key
