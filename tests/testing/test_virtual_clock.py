"""The test kit's virtual clock drives a service's timeouts and context timers deterministically,
on SQLite and PostgreSQL, for hand-written processes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import ClassVar, TypeGuard

import pytest
from sqlalchemy import MetaData

from loom.runtime import Service, Work, clock, now
from loom.runtime.processes import Decision, Tick, Timeout, TimeoutDue
from loom.testing._clock import VirtualClock

START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


class Reminders:
    name: ClassVar[str] = "Kit.Reminders"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[dict[str, int]]:
        return isinstance(value, dict) and "sent" in value


@pytest.fixture
async def service(database_url: str) -> AsyncIterator[Service]:
    service = Service.from_url(database_url, MetaData())
    yield service
    await service.dispose()


async def test_advance_fires_each_timeout_at_its_instant_in_order(service: Service) -> None:
    seen: list[tuple[str, str, datetime]] = []

    def remind(current: dict[str, int] | None) -> Decision[dict[str, int]]:
        sent = 0 if current is None else current["sent"] + 1
        again = [Timeout("remind", after=timedelta(minutes=10))] if sent < 3 else []
        return Decision({"sent": sent}, timeouts=again, ended=sent == 3)

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        seen.append((due.key, due.name, now()))
        await service.processes.timeout(Reminders, due, remind, work=work)

    service.timeouts.register(Reminders.name, on_timeout)
    ticks: list[Tick] = []

    async def sweep(tick: Tick, work: Work) -> None:
        ticks.append(tick)

    service.recurring.register("Kit.sweep", timedelta(minutes=15), sweep)
    with VirtualClock(service, start=START) as virtual:
        assert clock.now() == START
        await service.create_schema()
        await service.processes.run(Reminders, "b", remind)
        virtual._now += timedelta(minutes=1)
        await service.processes.run(Reminders, "a", remind)
        assert await virtual.advance(timedelta(minutes=8)) == 0
        assert (
            await virtual.advance(timedelta(hours=1, minutes=1)) == 6 + 4
        )  # 6 reminders, 4 sweeps
        assert virtual.now() == START + timedelta(hours=1, minutes=10)
        minute = timedelta(minutes=1)
        assert seen == [
            ("b", "remind", START + 10 * minute),
            ("a", "remind", START + 11 * minute),
            ("b", "remind", START + 20 * minute),
            ("a", "remind", START + 21 * minute),
            ("b", "remind", START + 30 * minute),
            ("a", "remind", START + 31 * minute),
        ]
        assert [t.scheduled_at for t in ticks] == [START + 15 * minute * i for i in (1, 2, 3, 4)]
        instances = await service.processes.list()
        assert [(i.key, i.state, i.ended) for i in instances] == [
            ("a", {"sent": 3}, True),
            ("b", {"sent": 3}, True),
        ]
        with pytest.raises(ValueError, match="does not go back"):
            await virtual.advance(timedelta(minutes=-1))
    assert clock.current_clock() is clock.system_clock  # the previous clock is back


async def test_a_clock_without_processes_just_moves(service: Service) -> None:
    async with VirtualClock(service, start=START) as virtual:
        assert await virtual.advance(timedelta(days=1)) == 0
        assert now() == START + timedelta(days=1)
        assert await virtual.jump(timedelta(days=1)) == 0
        assert now() == START + timedelta(days=2)


def test_start_must_be_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        VirtualClock(start=datetime(2030, 1, 1))


async def test_34_days_of_an_hourly_timer_fire_in_order(service: Service) -> None:
    """Every tick of an hourly timer over 34 virtual days runs at its instant, in order, with a
    daily timeout among them whose handler arms a follow-up due at once (fired at the same
    instant, before time moves on). The clock goes from one due instant to the next (see
    docs/processes.md, "A whole service"); the wall time is printed, not asserted."""
    ran: list[tuple[str, datetime]] = []

    def daily(current: dict[str, int] | None) -> Decision[dict[str, int]]:
        sent = 0 if current is None else current["sent"] + 1
        return Decision(
            {"sent": sent},
            timeouts=[
                Timeout("daily", after=timedelta(days=1)),
                Timeout("follow", after=timedelta()),
            ],
        )

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        ran.append((due.name, now()))
        if due.name == "daily":
            await service.processes.timeout(Reminders, due, daily, work=work)

    async def hourly(tick: Tick, work: Work) -> None:
        assert tick.scheduled_at == now() and tick.coalesced == 1
        ran.append(("hourly", now()))

    service.timeouts.register(Reminders.name, on_timeout)
    service.recurring.register("Kit.hourly", timedelta(hours=1), hourly)
    with VirtualClock(service, start=START) as virtual:
        await service.create_schema()
        await service.processes.run(Reminders, "r", daily)
        await virtual.run_due()  # the first follow-up, due at once
        started = time.perf_counter()
        fired = await virtual.advance(timedelta(days=34))
        wall = time.perf_counter() - started
    hours, days = 34 * 24, 34
    assert fired == hours + 2 * days
    expected = [("follow", START)]
    for h in range(1, hours + 1):
        at = START + timedelta(hours=h)
        if h % 24 == 0:  # the day's timeout and its follow-up, at the tick's instant
            expected += [("daily", at), ("follow", at)]
        expected.append(("hourly", at))
    assert sorted(ran[1:], key=lambda r: r[1]) == ran[1:]
    assert sorted(ran, key=lambda r: (r[1], r[0] == "hourly")) == sorted(
        expected, key=lambda r: (r[1], r[0] == "hourly")
    )
    print(f"34 virtual days, {fired} timeouts and ticks: {wall:.2f} s of wall time")


async def test_ticks_run_by_an_advance_are_not_run_again_after_a_restart(database_url: str) -> None:
    """An advance claims the ticks it walks through (the claim is durable); a service started
    afterwards on the same database runs the next tick at its time, never one already run."""
    runs: list[tuple[str, datetime]] = []

    def start(label: str) -> Service:
        service = Service.from_url(database_url, MetaData())

        async def hourly(tick: Tick, work: Work) -> None:
            runs.append((label, tick.scheduled_at))

        service.recurring.register("Kit.hourly", timedelta(hours=1), hourly)
        return service

    first = start("first")
    with VirtualClock(first, start=START) as virtual:
        await first.create_schema()
        await virtual.run_due()
        assert await virtual.advance(timedelta(hours=5, minutes=30)) == 5
        await first.dispose()
        second = start("second")
        virtual.services = [second]
        assert await virtual.run_due() == 0
        assert await virtual.advance(timedelta(minutes=29)) == 0
        assert await virtual.advance(timedelta(minutes=1)) == 1
        await second.dispose()
    hour = timedelta(hours=1)
    assert runs == [("first", START + h * hour) for h in range(1, 6)] + [
        ("second", START + 6 * hour)
    ]


async def test_a_timeout_a_tick_arms_fires_between_ticks(service: Service) -> None:
    """A tick's handler arms a timeout due before the next tick: the clock stops at it, in
    order, though the ticks after it were already claimed."""
    ran: list[tuple[str, datetime]] = []

    def nudge(current: dict[str, int] | None) -> Decision[dict[str, int]]:
        sent = 0 if current is None else current["sent"] + 1
        return Decision({"sent": sent}, timeouts=[Timeout("nudge", after=timedelta(minutes=20))])

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        ran.append((due.name, now()))

    async def hourly(tick: Tick, work: Work) -> None:
        ran.append(("hourly", now()))
        await service.processes.run(Reminders, f"at-{now():%H}", nudge, work=work)

    service.timeouts.register(Reminders.name, on_timeout)
    service.recurring.register("Kit.hourly", timedelta(hours=1), hourly)
    with VirtualClock(service, start=START) as virtual:
        await service.create_schema()
        await virtual.run_due()
        assert await virtual.advance(timedelta(hours=3)) == 3 + 2  # the third nudge is later
        assert await virtual.advance(timedelta(minutes=20)) == 1
    at = [START + timedelta(minutes=m) for m in (60, 80, 120, 140, 180, 200)]
    assert ran == [(name, t) for name, t in zip(["hourly", "nudge"] * 3, at, strict=True)]


async def test_a_timeout_armed_by_another_service_between_advances_is_found(
    database_url: str,
) -> None:
    """What the clock knows of the stored timeouts lasts one advance: a timeout another service
    (not driven by this clock) armed meanwhile fires at its instant in the next one."""
    fired: list[datetime] = []
    driven = Service.from_url(database_url, MetaData())
    other = Service.from_url(database_url, MetaData())

    def arm(current: dict[str, int] | None) -> Decision[dict[str, int]]:
        return Decision({"sent": 0}, timeouts=[Timeout("remind", after=timedelta(minutes=10))])

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        fired.append(now())

    driven.timeouts.register(Reminders.name, on_timeout)
    try:
        with VirtualClock(driven, start=START) as virtual:
            await driven.create_schema()
            assert await virtual.advance(timedelta(minutes=5)) == 0  # none armed, as read
            await other.processes.run(Reminders, "r", arm)  # due at 09:15
            assert await virtual.advance(timedelta(hours=1)) == 1
    finally:
        await other.dispose()
        await driven.dispose()
    assert fired == [START + timedelta(minutes=15)]


async def test_a_failing_tick_is_not_retried_and_the_next_ones_run(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[datetime] = []

    async def hourly(tick: Tick, work: Work) -> None:
        ran.append(tick.scheduled_at)
        if len(ran) == 2:
            raise RuntimeError("the second tick fails")

    service.recurring.register("Kit.hourly", timedelta(hours=1), hourly)
    with VirtualClock(service, start=START) as virtual:
        await service.create_schema()
        await virtual.run_due()
        with caplog.at_level("ERROR", logger="loom"):
            assert await virtual.advance(timedelta(hours=4)) == 4
    assert ran == [START + timedelta(hours=h) for h in (1, 2, 3, 4)]
    assert sum('"tick_failed"' in r.getMessage() for r in caplog.records) == 1
