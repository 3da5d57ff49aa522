"""Timeouts armed by one replica wake the scheduler of another (PostgreSQL LISTEN/NOTIFY).

Two Services on one database stand for two replicas. The firing one polls every 30 s, so only the
announcement can explain a prompt firing; a replica that cannot listen still fires by polling.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import MetaData
from sqlalchemy.engine import make_url

from loom.runtime import Service, Work, clock
from loom.runtime.processes import Decision, Timeout, TimeoutDue
from tests.waiting import until

from .processes_kit import Reminder, arm

pytestmark = pytest.mark.postgres
POLL = 30.0  # s: the firing replica's poll interval; a firing well before it was woken
PROMPT = 3.0  # s: "well before the poll": generous for a loaded machine, a tenth of POLL


@asynccontextmanager
async def two_replicas(
    url: str, failures: int = 0, **firing_options: Any
) -> AsyncIterator[tuple[Service, Service, asyncio.Queue[float]]]:
    """(arming, firing, lateness in s of each timeout `firing` ran); `firing`'s scheduler runs
    in the background, `arming` has none. The first `failures` runs of the handler raise (and
    each kills its timeout: one attempt only)."""
    arming = Service.from_url(url, MetaData(), processes=True)
    options = {"poll_interval": POLL, **firing_options}
    firing = Service.from_url(url, MetaData(), processes=True, scheduler_options=options)
    late: asyncio.Queue[float] = asyncio.Queue()
    left = [failures]

    async def handler(due: TimeoutDue, work: Work) -> None:
        if left[0]:
            left[0] -= 1
            raise RuntimeError("not yet")
        late.put_nowait((clock.now() - due.due_at).total_seconds())

    firing.timeouts.register(Reminder.name, handler, max_attempts=1)
    try:
        await arming.create_schema()
        await firing.create_schema()
        await firing.start_scheduler()
        await until(  # the first round is over: the scheduler sleeps for POLL
            lambda: firing.scheduler._sleeping_until is not None,
            timeout=10,
            what="the scheduler's first round",
        )
        yield arming, firing, late
    finally:
        await firing.dispose()
        await arming.dispose()


async def test_a_timeout_armed_by_one_replica_fires_promptly_on_another(postgres_url: str) -> None:
    async with two_replicas(postgres_url) as (a, b, late):
        assert b.scheduler.listening
        for i in range(5):
            await a.processes.run(Reminder, f"k{i}", arm(timedelta(milliseconds=300)))
            assert await asyncio.wait_for(late.get(), timeout=POLL / 2) < PROMPT
        # due now, armed by the store's `arm` as generated process workflows do
        async with a.transaction() as work:
            await a.processes.store.arm(
                work, Reminder.name, "g", Timeout("remind", after=timedelta(0)), clock.now()
            )
        assert await asyncio.wait_for(late.get(), timeout=POLL / 2) < PROMPT


async def test_a_redriven_dead_timeout_fires_promptly_on_the_running_replica(
    postgres_url: str,
) -> None:
    async with two_replicas(postgres_url, failures=1) as (a, _, late):

        async def dead() -> bool:
            return bool((await a.timers.counts())["dead"] == 1)

        await a.processes.run(Reminder, "k", arm(timedelta(0)))
        await until(dead, timeout=10, what="the failed timeout is dead")
        assert await a.timers.counts() == {"armed": 0, "dead": 1}
        assert await a.timers.redrive_all() == 1  # as `loom dead-letters redrive` does
        assert await asyncio.wait_for(late.get(), timeout=POLL / 2) < PROMPT


MARK = "mark"


async def next_after(listener: asyncpg.Connection, heard: asyncio.Queue[str]) -> str:
    """The next announcement heard, with one of our own sent now: the channel delivers in commit
    order, so hearing our mark first proves nothing was announced before it."""
    await listener.execute(f"NOTIFY loom_timers, '{MARK}'")
    return await asyncio.wait_for(heard.get(), timeout=10)


async def test_the_announcement_is_sent_on_commit_only(postgres_url: str) -> None:
    heard: asyncio.Queue[str] = asyncio.Queue()
    args = make_url(postgres_url).translate_connect_args(username="user")
    listener = await asyncpg.connect(**args)
    await listener.add_listener("loom_timers", lambda *a: heard.put_nowait(a[3]))
    service = Service.from_url(postgres_url, MetaData(), processes=True)
    try:
        await service.create_schema()
        with pytest.raises(RuntimeError):
            async with service.transaction() as work:
                await service.processes.run(Reminder, "k", arm(timedelta(seconds=1)), work=work)
                raise RuntimeError("roll back")
        await service.processes.run(Reminder, "k", arm(timedelta(seconds=2)))
        payload = await asyncio.wait_for(heard.get(), timeout=10)
        assert payload.endswith(" " + Reminder.name)
        assert await next_after(listener, heard) == MARK  # the rolled-back step announced nothing
        # a timeout due later than `announce_within` is left to the replicas' polls
        far: Decision[dict[str, int]] = Decision(
            {}, timeouts=[Timeout("remind", after=timedelta(hours=1))]
        )
        await service.processes.run(Reminder, "far", lambda current: far)
        assert await next_after(listener, heard) == MARK
    finally:
        await service.dispose()
        await listener.close()


async def test_without_listen_another_replicas_timeout_is_found_by_polling(
    postgres_url: str,
) -> None:
    async with two_replicas(postgres_url, listen=False, poll_interval=0.5) as (a, b, late):
        assert not b.scheduler.listening
        await a.processes.run(Reminder, "k", arm(timedelta(milliseconds=100)))
        assert await asyncio.wait_for(late.get(), timeout=POLL / 2) < PROMPT
