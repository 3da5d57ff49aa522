"""The key counts a producer stamps on the outbox rows bound for a broker (`messaging/ordering.py`),
on SQLite and PostgreSQL, through `write_durable` and the real tables: a channel carrying one type
this service publishes (PostgreSQL writes the count, the row and the NOTIFY in one statement), a
channel carrying several, several events in one commit, and a type the service does not publish."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import make_url, select
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.runtime import DomainEvent
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.ordering import key_counts, write_durable
from loom.runtime.messaging.outbox import NOTIFY_CHANNEL, outbox
from tests.runtime.conftest import runtime_tables


@dataclass(frozen=True, kw_only=True)
class Noted(DomainEvent):
    event_type: ClassVar[str] = "T.Noted"
    order: str


@dataclass(frozen=True, kw_only=True)
class Shipped(DomainEvent):
    event_type: ClassVar[str] = "T.Shipped"
    order: str


SOLO = Channel("solo", ["T.Noted"])
MIXED = Channel("mixed", ["T.Noted", "T.Shipped"])


@dataclass
class Producer:
    """What `write_durable` is told of the service: its database and which types it publishes."""

    dialect: str
    published: frozenset[str]
    model_revision: str | None = None

    def publishing(self, channel: Channel, event_type: str) -> object | None:
        return True if event_type in self.published else None


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    async with runtime_tables(database_url) as engine:
        yield engine


async def stamped(
    engine: AsyncEngine, producer: Producer, items: Sequence[tuple[Channel, DomainEvent]]
) -> list[str | None]:
    """The key counts of the rows one commit of `items` wrote, in their order."""
    async with engine.begin() as conn:
        before = set((await conn.execute(select(outbox.c.event_id))).scalars())
        await write_durable(conn, producer, items)
    async with engine.connect() as conn:
        rows = await conn.execute(select(outbox.c.event_id, outbox.c.key_counts))
        new = {event_id: counts for event_id, counts in rows if event_id not in before}
    assert len(new) == len(items)
    return [new[event_id] for event_id in sorted(new)]  # event ids grow in raising order


def producer_for(engine: AsyncEngine, *published: str) -> Producer:
    return Producer(engine.dialect.name, frozenset(published))


async def test_a_channel_of_one_type_counts_each_key_on_its_own(engine: AsyncEngine) -> None:
    producer = producer_for(engine, "T.Noted")
    assert await stamped(engine, producer, [(SOLO, Noted(order="a"))]) == ["T.Noted=1"]
    assert await stamped(engine, producer, [(SOLO, Noted(order="a"))]) == ["T.Noted=2"]
    assert await stamped(engine, producer, [(SOLO, Noted(order="b"))]) == ["T.Noted=1"]
    two = [(SOLO, Noted(order="a")), (SOLO, Noted(order="a"))]
    assert await stamped(engine, producer, two) == ["T.Noted=3", "T.Noted=4"]
    async with engine.connect() as conn:
        counts = select(key_counts.c.key, key_counts.c.count).order_by(key_counts.c.key)
        assert [tuple(row) for row in await conn.execute(counts)] == [("a", 4), ("b", 1)]


async def test_a_channel_of_several_types_stamps_every_type_of_the_key(
    engine: AsyncEngine,
) -> None:
    producer = producer_for(engine, "T.Noted", "T.Shipped")
    assert await stamped(engine, producer, [(MIXED, Noted(order="a"))]) == ["T.Noted=1"]
    assert await stamped(engine, producer, [(MIXED, Shipped(order="a"))]) == [
        "T.Noted=1,T.Shipped=1"
    ]
    both = [(MIXED, Noted(order="a")), (MIXED, Shipped(order="a"))]
    assert await stamped(engine, producer, both) == [
        "T.Noted=2,T.Shipped=1",
        "T.Noted=2,T.Shipped=2",
    ]
    # a type of the channel this service does not publish is not counted: the one it does
    # publish is then all there is to read, as on a channel of one type
    only_noted = producer_for(engine, "T.Noted")
    assert await stamped(engine, only_noted, [(MIXED, Noted(order="b"))]) == ["T.Noted=1"]


@pytest.mark.postgres
async def test_the_one_statement_write_notifies_the_relays(postgres_url: str) -> None:
    # `write_durable`'s single-event path writes the NOTIFY the relays of other replicas wait for
    url = make_url(postgres_url).set(drivername="postgresql")
    async with runtime_tables(postgres_url) as engine:
        listener = await asyncpg.connect(url.render_as_string(hide_password=False))
        woken = asyncio.Event()
        await listener.add_listener(NOTIFY_CHANNEL, lambda *_: woken.set())
        try:
            producer = producer_for(engine, "T.Noted")
            assert await stamped(engine, producer, [(SOLO, Noted(order="a"))]) == ["T.Noted=1"]
            await asyncio.wait_for(woken.wait(), timeout=10)
        finally:
            await listener.close()
