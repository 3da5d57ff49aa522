"""A virtual clock for services with timeouts and context timers: time moves only when the test
says so, and moving it fires what fell due, in order, deterministically.

    with VirtualClock(service, start=datetime(2030, 1, 1, tzinfo=UTC)) as clock:
        ...                                          # a request arms a 15-minute deadline
        await clock.advance(timedelta(minutes=14))   # nothing is due: nothing fires
        await clock.advance(timedelta(minutes=1))    # the deadline fires, at its instant
        assert [i.ended for i in await service.processes.list()] == [True]

`advance(delta)` walks time forward from one due instant to the next up to now + delta: at each it
sets the clock to that instant, runs the scheduler (`service.scheduler.run_due()`: every due
timeout and tick, and what their handlers made due) and settles the outbox (`service.settle()`),
so a handler reads `now()` as the instant its timeout was due. It answers how many timeouts and
ticks ran. Keep the service's background scheduler off (`create_app(..., scheduler=False)` or
LOOM_SCHEDULER=off): the clock drives the scheduler itself.

A step is cheap: the scheduler is told where the advance ends (`run_due(until=...)`), so a tick
due at the first instant claims its successors through the end at once, and the next due instant
comes from what the schedulers know (ticks claimed, the first stored timeout as read at the start
of the advance, forgotten when a driven service arms or claims one) rather than a read per step.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any, Self

from loom.runtime import Service, clock

_MAX_STEPS = 10_000


class VirtualClock:
    """The runtime clock (`loom.runtime.clock`), frozen at `start` until `advance` moves it."""

    def __init__(self, *services: Service, start: datetime | None = None) -> None:
        self.services: list[Service] = list(services)
        at = start or datetime.now(UTC).replace(microsecond=0)
        if at.tzinfo is None:
            raise ValueError("start must be timezone-aware")
        self._now = at.astimezone(UTC)
        self._previous: Any = None

    def __call__(self) -> datetime:
        return self._now

    def now(self) -> datetime:
        return self._now

    def attach(self, service: Service) -> None:
        """Drive this service's scheduler too (one clock for several services, as replicas)."""
        self.services.append(service)

    def detach(self, service: Service) -> None:
        """Stop driving `service` (it stopped: a restarted one is attached anew)."""
        self.services = [s for s in self.services if s is not service]

    @property
    def installed(self) -> bool:
        """Whether this is the runtime clock now."""
        return clock.current_clock() is self

    # -- installing ---------------------------------------------------------------------------
    def install(self) -> None:
        """Make this the runtime clock until `uninstall` (the `with` block does both)."""
        self._previous = clock.current_clock()
        clock.set_clock(self)

    def uninstall(self) -> None:
        clock.set_clock(self._previous or clock.system_clock)
        self._previous = None

    def __enter__(self) -> Self:
        self.install()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.uninstall()

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- moving -------------------------------------------------------------------------------
    async def advance(self, delta: timedelta) -> int:
        """Move time forward by `delta`, firing everything due on the way, in order."""
        if delta < timedelta(0):
            raise ValueError("a virtual clock does not go back")
        return await self.advance_to(self._now + delta)

    async def advance_to(self, target: datetime) -> int:
        """Move time forward to `target`, firing everything due on the way, in order."""
        if target < self._now:
            raise ValueError("a virtual clock does not go back")
        for service in self.services:  # armed or fired by hand since the last advance, by anyone
            service.scheduler.forget_timeouts()
            if service.uses_processes:
                await service.scheduler.ticks.refresh()
        ran = 0
        for _ in range(_MAX_STEPS):
            earliest = await self._next_due()
            if earliest is None or earliest > target:
                break
            self._now = max(self._now, earliest)
            fired = await self._run_due(target)
            ran += fired
            # nothing ran: a service's next tick was another's, already run (its claim failed
            # and it read the row again: look again), or it is due but not claimable (another
            # service holds its lease): move on
            if not fired and await self._next_due() == earliest:
                break
        else:
            raise RuntimeError(f"more than {_MAX_STEPS} scheduler passes before {target}")
        self._now = target
        return ran + await self._run_due(target)

    async def jump(self, delta: timedelta) -> int:
        """Downtime: move time forward by `delta` with nothing running on the way, then run
        what is due at the new instant once (missed ticks coalesce into one run, overdue
        timeouts fire late)."""
        if delta < timedelta(0):
            raise ValueError("a virtual clock does not go back")
        self._now += delta
        return await self.run_due()

    async def run_due(self) -> int:
        """Run what is due now on every service (timeouts, ticks, then outbox deliveries)."""
        return await self._run_due(None)

    async def _run_due(self, until: datetime | None) -> int:
        ran = 0
        for _ in range(_MAX_STEPS):
            fired = delivered = 0
            for service in self.services:
                fired += await service.scheduler.run_due(until)
                delivered += await service.settle()
            ran += fired
            # one service's `run_due` stops only when nothing it ran made anything due, so
            # only deliveries (or, with replicas, another's handlers) can have: look again
            if not delivered and (not fired or len(self.services) == 1):
                return ran
        raise RuntimeError(f"more than {_MAX_STEPS} scheduler passes at {self._now}")

    async def _next_due(self) -> datetime | None:
        found = [await s.scheduler.next_due() for s in self.services if s.uses_processes]
        return min((x for x in found if x is not None), default=None)
