"""A consumer's progress through a key's events (`messaging/ordering.py`), on PostgreSQL through
the real tables: a key's first message writes its inbox row and its progress in one statement
(`enter_first`), once; a redelivery writes nothing; a message applied after a later one of its key
leaves the progress as it was and is told it came late."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.runtime.messaging.key_order import KeyOrder
from loom.runtime.messaging.ordering import _entry_of_first, enter_first, key_progress
from loom.runtime.messaging.outbox import REACTION, inbox
from tests.runtime.conftest import runtime_tables

pytestmark = pytest.mark.postgres
CONSUMER = "Receiver.onPinged"


@pytest.fixture
async def engine(postgres_url: str) -> AsyncIterator[AsyncEngine]:
    async with runtime_tables(postgres_url) as engine:
        yield engine


def inbox_row(event_id: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "consumer": CONSUMER,
        "event_id": event_id,
        "processed_at": now,
        "tenant": None,
        "kind": REACTION,
        "event_type": "Sender.Pinged",
        "correlation_id": str(event_id),
        "causation_id": None,
        "occurred_at": now,
    }


def order(key: str, count: int) -> KeyOrder:
    return KeyOrder(CONSUMER, key, "Sender.Pinged", {"Sender.Pinged": count}, ())


async def enter(engine: AsyncEngine, event_id: Any, at: KeyOrder) -> bool:
    async with engine.begin() as conn:
        return await enter_first(conn, at, inbox_row(event_id))


async def progress(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as conn:
        rows = await conn.execute(select(key_progress.c.key, key_progress.c.applied))
        return {str(key): int(applied) for key, applied in rows}


async def inbox_ids(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        return list((await conn.scalars(select(inbox.c.event_id))).all())


async def test_a_first_message_writes_its_inbox_row_and_progress_once(engine: AsyncEngine) -> None:
    event = uuid4()
    first = order("a", 1)
    assert await enter(engine, event, first)
    assert first.recorded and not first.late
    assert await progress(engine) == {"a": 1}
    assert await inbox_ids(engine) == [event]
    redelivered = order("a", 1)
    assert not await enter(engine, event, redelivered)  # the inbox holds it: nothing written
    assert not redelivered.recorded
    assert await progress(engine) == {"a": 1}
    assert await inbox_ids(engine) == [event]


async def test_a_message_applied_after_a_later_one_keeps_the_progress(engine: AsyncEngine) -> None:
    # a key's events counted 1 and 2 applied in the wrong order (the gap limit forced the
    # second): the first is recorded as late, and the progress stays at 2
    assert await enter(engine, uuid4(), order("b", 2))
    late = order("b", 1)
    assert await enter(engine, uuid4(), late)
    assert late.recorded and late.late
    assert await progress(engine) == {"b": 2}


async def test_the_statement_has_no_values_of_its_own_to_extract() -> None:
    # every value comes with the execution: SQLAlchemy's cache key of the statement carries
    # none, so an execution maps no parameters of the cached statement onto its own
    key = _entry_of_first()._generate_cache_key()
    assert key is not None  # still cached
    assert key.bindparams == []
