"""The stored timeouts and ticks, on every backend: a timeout is claimable from its due instant (or
the end of the lease that holds it) and not before, each is claimed by one claimant at a time,
however many replicas claim at once, a claimant that lost its lease changes nothing, failures are
retried then dead-lettered and redriven, and a context timer ticks once across replicas.

Several services on one database stand for replicas (each its own engine and pool, as a process
would have); the runtime clock is a `VirtualClock` the test moves."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import timedelta
from uuid import UUID

import pytest
from sqlalchemy import select

from loom.runtime import Backoff, Service, Work
from loom.runtime.processes import Tick, TimeoutDue
from loom.runtime.processes.tables import timers
from loom.testing._clock import VirtualClock

from ..processes_kit import START, Reminder, arm, lines
from .conftest import Backend

LEASE = timedelta(seconds=60)  # the scheduler's default


@pytest.fixture
def clock() -> Iterator[VirtualClock]:
    with VirtualClock(start=START) as virtual:
        yield virtual


def handled(*services: Service, fired: list[str], fail: int = 0, **options: object) -> None:
    """Register a Reminder handler on each service: it notes the key; the first `fail` runs raise."""
    left = [fail]

    async def handler(due: TimeoutDue, work: Work) -> None:
        if left[0]:
            left[0] -= 1
            raise RuntimeError("not yet")
        fired.append(due.key)

    for service in services:
        service.timeouts.register(Reminder.name, handler, **options)  # type: ignore[arg-type]


async def holder(service: Service, job_id: UUID) -> str | None:
    """Who holds the lease of the timeout (None: nobody); the timeout must exist."""
    async with service.engine.connect() as conn:
        found = await conn.execute(select(timers.c.claimed_by).where(timers.c.job_id == job_id))
        claimed_by: str | None = found.scalar_one()
    return claimed_by


async def test_a_timeout_is_claimable_from_its_due_instant_not_before(
    backend: Backend, clock: VirtualClock
) -> None:
    service = await backend.service(processes=True)
    handled(service, fired=[])
    await service.processes.run(Reminder, "soon", arm(timedelta(minutes=1)))
    await service.processes.run(Reminder, "late", arm(timedelta(minutes=2)))
    assert await service.timers.next_due() == START + timedelta(minutes=1)
    clock._now += timedelta(seconds=59)
    assert (await service.scheduler._claim())[0] == []
    clock._now += timedelta(seconds=1)
    (row,), until = await service.scheduler._claim()
    assert (row.key, row.due_at, until) == ("soon", START + timedelta(minutes=1), clock() + LEASE)
    # the claimed one is next claimable when its lease ends, after the later one is due
    assert await service.timers.next_due() == START + timedelta(minutes=2)
    async with service.transaction() as work:
        assert await service.processes.store.disarm(work, Reminder.name, "late", "remind") == 1
    assert await service.timers.next_due() == clock() + LEASE
    assert await service.timers.counts() == {"armed": 1, "dead": 0}


async def test_concurrent_claims_take_each_timeout_once(
    backend: Backend, clock: VirtualClock
) -> None:
    services = await backend.replicas(3, processes=True, scheduler_options={"batch_size": 4})
    handled(*services, fired=[])
    for i in range(30):
        await services[0].processes.run(Reminder, f"k{i}", arm(timedelta(minutes=1)))
    clock._now += timedelta(minutes=1)
    claims = [s.scheduler._claim() for s in services for _ in range(4)]  # 12 claims of 4
    claimed = [row.key for rows, _ in await asyncio.gather(*claims) for row in rows]
    assert sorted(claimed) == sorted(f"k{i}" for i in range(30))  # each once: none twice
    assert (await services[1].scheduler._claim())[0] == []  # every one is leased


async def test_two_schedulers_fire_each_timeout_once(backend: Backend, clock: VirtualClock) -> None:
    fired: list[tuple[str, str]] = []
    a, b = await backend.replicas(2, processes=True, scheduler_options={"batch_size": 7})
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


async def test_a_scheduler_that_dies_holding_a_lease_delays_its_timeouts_by_the_lease(
    backend: Backend, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    fired: list[str] = []
    dead, alive = await backend.replicas(2, processes=True)
    handled(dead, alive, fired=fired)
    clock.attach(alive)
    await alive.processes.run(Reminder, "k", arm(timedelta(minutes=1)))
    clock._now += timedelta(minutes=1)
    rows, until = await dead.scheduler._claim()  # claims, then "dies"
    assert len(rows) == 1 and until == clock.now() + LEASE
    assert await alive.scheduler.run_due() == 0
    with caplog.at_level(logging.INFO, logger="loom.events"):
        await clock.advance(timedelta(seconds=59))
        assert fired == []
        await clock.advance(timedelta(seconds=1))
    assert fired == ["k"]
    (line,) = lines(caplog, "timeout_fired")
    assert line["attempt"] == 1


async def test_a_claimant_that_lost_its_lease_changes_nothing(
    backend: Backend, clock: VirtualClock
) -> None:
    fired: list[str] = []
    first, second = await backend.replicas(2, processes=True)
    handled(first, second, fired=fired)
    await first.processes.run(Reminder, "k", arm(timedelta(0)))
    (row,), _ = await first.scheduler._claim()
    clock._now += LEASE  # the lease ends: the second may claim it
    (again,), _ = await second.scheduler._claim()
    assert again.job_id == row.job_id
    await first.scheduler._release([row.job_id])
    assert await first.scheduler._fire(row) == "stale"
    assert fired == [] and await holder(first, row.job_id) == second.scheduler.name
    assert await second.scheduler._fire(again) == "fired"
    assert fired == ["k"] and await second.timers.counts() == {"armed": 0, "dead": 0}


async def test_fire_now_waits_for_a_live_lease(backend: Backend, clock: VirtualClock) -> None:
    fired: list[str] = []
    scheduler, operator = await backend.replicas(2, processes=True)
    handled(scheduler, operator, fired=fired)
    await scheduler.processes.run(Reminder, "k", arm(timedelta(hours=1)))
    async with operator.transaction() as work:
        job = await operator.processes.store.armed(work, Reminder.name, "k", "remind")
    assert job is not None
    assert await operator.scheduler.fire_now(UUID(int=1)) is None  # no such timeout
    clock._now += timedelta(hours=1)
    (row,), _ = await scheduler.scheduler._claim()
    assert await operator.scheduler.fire_now(job) == "busy"
    clock._now += LEASE
    assert await operator.scheduler.fire_now(job) == "fired"
    assert await scheduler.scheduler._fire(row) == "stale"
    assert fired == ["k"]


async def test_failures_are_retried_then_dead_lettered_and_redriven(
    backend: Backend, clock: VirtualClock
) -> None:
    fired: list[str] = []
    service = await backend.service(processes=True)
    backoff = Backoff(initial=timedelta(seconds=10), factor=1.0)
    handled(service, fired=fired, fail=2, max_attempts=2, backoff=backoff)
    clock.attach(service)
    await service.processes.run(Reminder, "k", arm(timedelta(minutes=1)))
    await clock.advance(timedelta(minutes=1))  # the first attempt fails
    assert await service.timers.next_due() == START + timedelta(minutes=1, seconds=10)
    await clock.advance(timedelta(seconds=10))  # the second too: dead
    assert await service.timers.counts() == {"armed": 0, "dead": 1}
    (dead,) = await service.timers.dead_letters()
    assert (dead.key, dead.attempts, dead.last_error) == ("k", 2, "RuntimeError: not yet")
    assert await service.timers.next_due() is None  # a dead timeout is never claimed
    assert await service.timers.redrive(UUID(int=1)) is False
    assert await service.timers.redrive(dead.job_id) is True
    assert await service.timers.redrive(dead.job_id) is False  # armed now, not dead
    await clock.run_due()
    assert fired == ["k"] and await service.timers.counts() == {"armed": 0, "dead": 0}


async def test_a_replica_that_does_not_handle_a_process_leaves_its_timeouts_alone(
    backend: Backend, clock: VirtualClock
) -> None:
    """As in a rolling deploy: an older replica without the process never claims its timeouts
    (it would only dead-letter them)."""
    fired: list[str] = []
    old, new = await backend.replicas(2, processes=True)

    async def other(due: TimeoutDue, work: Work) -> None:
        raise AssertionError("never fired")

    handled(new, fired=fired)
    old.timeouts.register("Test.Other", other)
    await new.processes.run(Reminder, "k", arm(timedelta(minutes=1)))
    clock._now += timedelta(minutes=1)
    assert await old.scheduler.run_due() == 0
    assert await old.scheduler.next_due() is None
    assert await old.timers.counts() == {"armed": 1, "dead": 0}
    assert await new.scheduler.run_due() == 1
    assert fired == ["k"]


async def test_a_tick_runs_once_across_replicas(backend: Backend, clock: VirtualClock) -> None:
    ran: list[str] = []
    services = await backend.replicas(3, processes=True)
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
