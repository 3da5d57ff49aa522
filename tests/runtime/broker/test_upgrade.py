"""A deployment from before per-key order (issue 12 §2) upgraded in place: its databases lack
`__loom_key_counts`, `__loom_key_progress` and the outbox's `key_counts`, and its outbox still
holds rows relayed by nobody yet. The new service refuses each database, naming what is missing;
`loom run --migrate`'s step adds exactly that; then the old rows (no counts: messages from before
them) and new ones (counted from the upgrade on) are all applied, once each, in commit order."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from loom.migrate.serve import prepare_database
from loom.runtime import SchemaMismatch
from loom.testing import settle_all

from .conftest import INVENTORY, MODEL, ORDERS, Topology
from .test_replica_order import NOTES, SPLIT, applied_notes, note, notes_subscriber
from .test_topology import place, stock

BEFORE_ORDER = [
    "DROP TABLE __loom_key_counts",
    "DROP TABLE __loom_key_progress",
    "ALTER TABLE __loom_outbox DROP COLUMN key_counts",
]
MIGRATED = [
    "  --migrate: create table __loom_key_counts (4 columns)",
    "  --migrate: create table __loom_key_progress (4 columns)",
    "  --migrate: add column __loom_outbox.key_counts (String, optional)",
]


async def as_before_order(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        for statement in BEFORE_ORDER:
            await conn.execute(text(statement))
    await engine.dispose()


async def test_an_old_deployment_is_refused_then_migrated_and_loses_nothing(
    main: Any, topology: Topology, two_urls: tuple[str, str]
) -> None:
    seen: list[tuple[int, str, int]] = []
    orders = await topology.start(ORDERS, two_urls[0], relay=False)
    inventory = await topology.start(
        INVENTORY, two_urls[1], subscribe=notes_subscriber(main, seen, 0, None)
    )
    await stock(inventory, "lamp")
    key = await place(orders)
    for seq in (1, 2, 3):  # committed, still in the outbox when the old version stops
        await note(orders, key, seq)
    await topology.stop(orders)
    await topology.stop(inventory)
    for url in two_urls:
        await as_before_order(url)

    refused = []
    for contexts, url in zip((ORDERS, INVENTORY), two_urls, strict=True):
        with pytest.raises(SchemaMismatch) as mismatch:
            await topology.start(contexts, url)
        refused += mismatch.value.diffs
    for url in two_urls:
        notes = await prepare_database(MODEL, main, url, f" --database-url {url}", migrate=True)
        assert notes == MIGRATED

    orders = await topology.start(ORDERS, two_urls[0])
    inventory = await topology.start(
        INVENTORY,
        two_urls[1],
        subscribe=notes_subscriber(main, seen, 0, None),
        consumer_options=SPLIT,
    )
    for seq in (4, 5, 6):
        await note(orders, key, seq)
    await settle_all([orders, inventory])
    applied = await applied_notes(inventory, [key])
    handled = [s for _, k, s in seen if k == key]
    print(f"refused for {refused}; applied {applied[key]}; handed {handled}")
    assert sorted(refused) == [
        "column __loom_outbox.key_counts is missing",
        "column __loom_outbox.key_counts is missing",  # Inventory relays its own events too
        "table __loom_key_counts is missing",
        "table __loom_key_counts is missing",
        "table __loom_key_progress is missing",
        "table __loom_key_progress is missing",
    ]
    # applied once each, in order: the notes the reactions wrote are the count of what applied
    assert applied == {key: [1, 2, 3, 4, 5, 6]}
    # every note was handed to the reaction; a handing may repeat without applying twice (a
    # redelivery past ack_wait on a loaded machine, which the inbox skips), so the set is compared
    assert sorted(set(handled)) == [1, 2, 3, 4, 5, 6], f"lost: {handled}"
    assert NOTES in {c.name for ch in topology.channels for c in ch.consumers}
