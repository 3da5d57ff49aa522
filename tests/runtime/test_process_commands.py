"""Durable commands of a step the runner runs in its own transaction: their outbox rows are written
by the step's own write (on PostgreSQL, its one statement), and the relay delivers them, in order,
once; a step that loses its race leaves no outbox row; in a caller's unit of work they leave at
the caller's commit, as before. SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from sqlalchemy import MetaData, func, select

from loom.runtime import Channel, ConcurrencyConflict, DomainEvent, Service, current_envelope
from loom.runtime.messaging.outbox import outbox
from loom.runtime.processes import Decision, Outcome, SqlProcessStore

from .test_process_runner import Counter, Ping, State


@dataclass(frozen=True, kw_only=True)
class Note(DomainEvent):
    """Not on a channel: dispatched in-process after the commit."""

    event_type: ClassVar[str] = "Test.Note"
    n: int


def send(*events: DomainEvent) -> Any:
    def step(current: State | None) -> Decision[State]:
        n = 0 if current is None else current["n"]
        return Decision({"n": n + 1}, commands=list(events))

    return step


@pytest.fixture
async def service(database_url: str) -> AsyncIterator[Service]:
    channels = [Channel("pings", ["Test.Ping"])]
    service = Service.from_url(database_url, MetaData(), processes=True, channels=channels)
    service.events.register(Ping)
    await service.create_schema()
    yield service
    await service.dispose()


async def outbox_rows(service: Service) -> int:
    async with service.engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(outbox))).scalar_one())


async def test_durable_commands_leave_in_order_once_and_local_ones_after_the_commit(
    service: Service,
) -> None:
    delivered: list[int] = []
    noted: list[int] = []

    async def on_ping(event: Ping) -> None:
        delivered.append(event.n)

    async def on_note(event: Note) -> None:
        noted.append(event.n)

    service.events.subscribe(Ping, on_ping)
    service.events.subscribe(Note, on_note)
    step = send(Ping(n=1), Note(n=2), Ping(n=3))
    assert await service.processes.run(Counter, "k", step) is Outcome.DECIDED
    assert noted == [2]  # in-process, right after the commit
    assert await outbox_rows(service) == 2
    await service.settle()
    assert delivered == [1, 3]
    await service.settle()
    assert delivered == [1, 3]


async def test_a_step_that_loses_its_race_leaves_no_outbox_row(service: Service) -> None:
    await service.processes.run(Counter, "k", send())
    store = SqlProcessStore(service)
    stale = await service.processes.get(Counter, "k")
    assert stale is not None
    await service.processes.run(Counter, "k", send())  # the instance moves on: version 2
    with pytest.raises(ConcurrencyConflict):
        async with service.transaction() as work:
            await store.apply(work, stale, stale.version, events=[(service.channels[0], Ping(n=9))])
    assert await outbox_rows(service) == 0
    await service.settle()


async def test_in_a_callers_unit_of_work_commands_leave_at_its_commit(service: Service) -> None:
    delivered: list[int] = []

    async def on_ping(event: Ping) -> None:
        delivered.append(event.n)

    service.events.subscribe(Ping, on_ping)
    with pytest.raises(RuntimeError):
        async with service.transaction() as work:
            await service.processes.run(Counter, "k", send(Ping(n=1)), work=work)
            raise RuntimeError("the caller rolls back")
    assert await outbox_rows(service) == 0
    async with service.transaction() as work:
        await service.processes.run(Counter, "k", send(Ping(n=2)), work=work)
    await service.settle()
    assert delivered == [2]


async def test_a_steps_outbox_rows_carry_the_model_revision(service: Service) -> None:
    # the step's own write (PostgreSQL: its one statement; SQLite: the outbox insert after it)
    service.events.model_revision = "0123456789ab"
    read: list[str | None] = []

    async def on_ping(event: Ping) -> None:
        envelope = current_envelope()
        assert envelope is not None
        read.append(envelope.model_revision)

    service.events.subscribe(Ping, on_ping)
    await service.processes.run(Counter, "k", send(Ping(n=1), Ping(n=2)))
    async with service.engine.connect() as conn:
        stored = (await conn.execute(select(outbox.c.model_revision))).scalars().all()
    assert stored == ["0123456789ab"] * 2
    await service.settle()
    assert read == ["0123456789ab"] * 2  # the relay read it back onto the envelope
