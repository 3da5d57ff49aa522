"""Timeouts and context timers with several replicas (a second Service and engine on the same
database, as a second process would be), a scheduler that dies holding a lease, the background
loop that the app's lifespan starts, and a race settled by redelivery on PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeGuard

import pytest
from sqlalchemy import MetaData

from loom.runtime import Service, Work
from loom.runtime.processes import Decision, SqlProcessStore, Tick, Timeout, TimeoutDue
from loom.testing._clock import VirtualClock

from .processes_kit import lines, running
from .test_process_runner import Racing

START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
WAIT = 60  # seconds: bounds a failure only; success returns as soon as the handler ran


class Reminder:
    name: ClassVar[str] = "Test.Reminder"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[dict[str, int]]:
        return isinstance(value, dict)


def arm(after: timedelta) -> Any:
    return lambda current: Decision({}, timeouts=[Timeout("remind", after=after)])


@asynccontextmanager
async def replicas(url: str, n: int = 2, **options: Any) -> AsyncIterator[list[Service]]:
    services = [Service.from_url(url, MetaData(), processes=True, **options) for _ in range(n)]
    try:
        for service in services:
            await service.create_schema()
        yield services
    finally:
        for service in services:
            await service.dispose()


async def test_two_schedulers_fire_each_timeout_once(database_url: str) -> None:
    fired: list[tuple[str, str]] = []
    with VirtualClock(start=START) as clock:
        async with replicas(database_url, scheduler_options={"batch_size": 7}) as (a, b):
            for label, service in (("a", a), ("b", b)):

                async def handler(due: TimeoutDue, work: Work, label: str = label) -> None:
                    fired.append((label, due.key))
                    await asyncio.sleep(0)  # let the other replica claim meanwhile

                service.timeouts.register(Reminder.name, handler)
            for i in range(60):
                await a.processes.run(Reminder, f"k{i}", arm(timedelta(minutes=1)))
            clock._now += timedelta(minutes=1)
            counts = await asyncio.gather(a.scheduler.run_due(), b.scheduler.run_due())
            assert sum(counts) == 60
            assert sorted(k for _, k in fired) == sorted(f"k{i}" for i in range(60))
            assert await a.timers.counts() == {"armed": 0, "dead": 0}


async def test_a_tick_runs_once_across_replicas(database_url: str) -> None:
    ran: list[str] = []
    with VirtualClock(start=START) as clock:
        async with replicas(database_url, n=3) as services:
            for i, service in enumerate(services):

                async def sweep(tick: Tick, work: Work, label: str = str(i)) -> None:
                    ran.append(label)

                service.recurring.register("Test.sweep", timedelta(minutes=5), sweep)
                clock.attach(service)
            await clock.advance(timedelta(minutes=4))
            assert ran == []
            await clock.advance(timedelta(minutes=1))
            assert len(ran) == 1
            await clock.advance(timedelta(minutes=20))
            assert len(ran) == 5
            # all at once, as replicas polling together would
            clock._now += timedelta(minutes=5)
            await asyncio.gather(*(s.scheduler.run_due() for s in services))
            assert len(ran) == 6


async def test_a_scheduler_that_dies_holding_a_lease_delays_its_timeouts_by_the_lease(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    fired: list[str] = []
    with VirtualClock(start=START) as clock:
        async with replicas(database_url) as (dead, alive):

            async def handler(due: TimeoutDue, work: Work) -> None:
                fired.append(due.key)

            alive.timeouts.register(Reminder.name, handler)
            dead.timeouts.register(Reminder.name, handler)
            clock.attach(alive)
            await alive.processes.run(Reminder, "k", arm(timedelta(minutes=1)))
            clock._now += timedelta(minutes=1)
            rows, until = await dead.scheduler._claim()  # claims, then "dies"
            assert len(rows) == 1 and until == clock.now() + timedelta(seconds=60)
            assert await alive.scheduler.run_due() == 0
            with caplog.at_level(logging.INFO, logger="loom.events"):
                await clock.advance(timedelta(seconds=59))
                assert fired == []
                await clock.advance(timedelta(seconds=1))
            assert fired == ["k"]
            (line,) = lines(caplog, "timeout_fired")
            assert line["attempt"] == 1


async def test_a_replica_that_does_not_handle_a_process_leaves_its_timeouts_alone(
    database_url: str,
) -> None:
    """As in a rolling deploy: an older replica without the process never claims its timeouts
    (it would only dead-letter them)."""
    fired: list[str] = []
    with VirtualClock(start=START) as clock:
        async with replicas(database_url) as (old, new):

            async def handler(due: TimeoutDue, work: Work) -> None:
                fired.append(due.key)

            new.timeouts.register(Reminder.name, handler)
            old.timeouts.register("Test.Other", handler)
            await new.processes.run(Reminder, "k", arm(timedelta(minutes=1)))
            clock._now += timedelta(minutes=1)
            assert await old.scheduler.run_due() == 0
            assert await old.scheduler.next_due() is None
            assert await old.timers.counts() == {"armed": 1, "dead": 0}
            assert await new.scheduler.run_due() == 1
            assert fired == ["k"]


async def test_the_background_scheduler_fires_without_help(database_url: str) -> None:
    """Real time: the loop is woken by the step that arms a timeout due now, and sleeps until
    the next one is due."""
    fired: asyncio.Queue[str] = asyncio.Queue()
    async with replicas(database_url, n=1, scheduler_options={"poll_interval": 30}) as (svc,):

        async def handler(due: TimeoutDue, work: Work) -> None:
            fired.put_nowait(due.key)

        svc.timeouts.register(Reminder.name, handler)
        await svc.start_scheduler()
        assert svc.scheduler.running
        await svc.processes.run(Reminder, "now", arm(timedelta(0)))
        assert await asyncio.wait_for(fired.get(), timeout=WAIT) == "now"
        await svc.processes.run(Reminder, "soon", arm(timedelta(milliseconds=200)))
        assert await asyncio.wait_for(fired.get(), timeout=WAIT) == "soon"
        await svc.stop_scheduler()
        assert not svc.scheduler.running


async def test_the_app_lifespan_runs_the_scheduler_when_asked(database_url: str) -> None:
    from . import processes_service

    app = processes_service.build_app(database_url, scheduler=True)
    async with app.router.lifespan_context(app):
        assert app.state.loom.scheduler.running
    assert not app.state.loom.scheduler.running


@pytest.mark.postgres
async def test_a_durable_step_that_loses_a_race_is_redelivered_and_ignored(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Confirmed (a durable delivery) and deadline passed (a timeout) decide on the same
    version of one instance: one wins; the loser fails with a conflict. A losing delivery is
    delivered again and finds the instance ended; a losing timeout was disarmed by the winner,
    so nothing is left to retry."""
    async with running(postgres_url, durable=True) as svc:
        service = svc.service
        service.lock_reads = False  # no row lock on load: only the version decides
        appointment = await svc.request(minutes=32)
        await service.settle()
        assert len((await svc.instance("deadline", appointment))["pending"]) == 1
        # Racing from before the confirmation: the relay may deliver "confirmed" at once, and a
        # delivery loaded before the swap would not race (seen under load: no conflict at all).
        service.processes.store = Racing(SqlProcessStore(), 2)
        r = await svc.client.post(f"/api/appointments/{appointment}/confirm")
        assert r.status_code == 204, r.text
        with caplog.at_level(logging.INFO, logger="loom.events"):
            await asyncio.gather(service.settle(), svc.clock.advance(timedelta(minutes=32)))
            service.processes.store = SqlProcessStore()
            await svc.clock.advance(timedelta(minutes=5))  # the retries fall due
        facts = ("reactor_failed", "timeout_retry_scheduled", "timeout_stale")
        # The timeout loses either on the version (a conflict) or, when the winner's commit came
        # first, by finding its timer disarmed: both are `timeout_stale`, the second without error.
        failures = [
            x
            for x in lines(caplog, *facts)
            if "ConcurrencyConflict" in x.get("error", "") or x["event"] == "timeout_stale"
        ]
        assert len(failures) == 1, failures  # one step lost
        (ended,) = [x for x in lines(caplog, "process_decided") if x["ended"]]  # one step won
        if failures[0]["event"] == "timeout_stale":
            # the timeout lost to "confirmed", which disarmed it: nothing is left to retry
            assert ended["cancelled"] == ["deadline"]
            assert lines(caplog, "process_ignored_ended") == []
        else:
            # the loser is delivered again, and finds the instance ended
            (ignored,) = lines(caplog, "process_ignored_ended")
            assert ignored["key"] == str(appointment)
        instance = await svc.instance("deadline", appointment)
        assert (instance["ended"], instance["pending"]) == (True, [])
        assert await svc.status(appointment) == "Confirmed"  # confirmed before the deadline
        assert lines(caplog, "timeout_dead_lettered") == []
