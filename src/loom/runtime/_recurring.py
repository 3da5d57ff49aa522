"""Context timers: recurring sweeps (`service.recurring`), each tick run once across replicas.

`__loom_ticks` holds one row per timer: when its next tick is due (the row is created `every`
after the first start). A scheduler whose clock has passed `next_at` claims the tick with a
compare-and-set, `UPDATE … SET next_at = :next WHERE name = :name AND next_at = :seen`: of several
replicas that saw the same `next_at`, exactly one changes the row, and only that one runs the
tick. The claim commits on its own, before the handler runs: a tick whose handler fails is logged
(`tick_failed`) and not retried; the next tick comes at its time.

Catch-up: after downtime, every missed tick is coalesced into ONE run (`Tick.coalesced` says how
many it stands for), and the schedule continues `every` from now. A sweep is derived from the state
it reads ("expire what is overdue"), so running it once covers every missed tick; running it N
times back to back would only repeat the same work.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from . import clock
from ._claimant import guarded_work
from ._ids import new_id
from ._logs import log_fact, use_correlation_id
from ._principal import SYSTEM, use_principal
from ._process_model import Tick
from ._process_tables import ticks

if TYPE_CHECKING:
    from ._service import Service
    from ._work import Work

TickHandler = Callable[[Tick, "Work"], Awaitable[None]]
k = ticks.c
_DUE = select(k.name, k.next_at).where(
    k.name.in_(bindparam("names", expanding=True)), k.next_at <= bindparam("now")
)
_NEXT = select(k.next_at).where(k.name == bindparam("tick"))
_CLAIM = (
    update(ticks)
    .where(k.name == bindparam("tick"), k.next_at == bindparam("seen"))
    .values(next_at=bindparam("next"), last_run_at=bindparam("now"))
)


@dataclass(frozen=True, slots=True)
class Timer:
    name: str
    every: timedelta
    handler: TickHandler


class Recurring:
    """`service.recurring`: the context timers of the service."""

    def __init__(self) -> None:
        self._timers: dict[str, Timer] = {}

    def register(self, name: str, every: timedelta, handler: TickHandler) -> None:
        """Run `handler(tick, work)` every `every`, once per tick across replicas, in a
        transaction of its own, as the system principal."""
        if name in self._timers:
            raise ValueError(f"a context timer is already named {name!r}")
        if every <= timedelta(0):
            raise ValueError(f"timer {name}: `every` must be positive")
        self._timers[name] = Timer(name, every, handler)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._timers)

    def get(self, name: str) -> Timer | None:
        return self._timers.get(name)

    def __len__(self) -> int:
        return len(self._timers)


def _insert_missing(dialect: str) -> Any:
    table_insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return table_insert(ticks).on_conflict_do_nothing()


class TickRunner:
    """The scheduler's half for context timers."""

    def __init__(self, service: Service) -> None:
        self._service = service
        self._known: set[str] = set()

    async def ensure_rows(self) -> None:
        """Create the row of every registered timer that has none (first tick `every` from now)."""
        service = self._service
        missing = [t for t in service.recurring.names if t not in self._known]
        if not missing:
            return
        now = clock.now()
        rows = []
        for name in missing:
            timer = service.recurring.get(name)
            assert timer is not None
            rows.append({"name": name, "next_at": now + timer.every, "last_run_at": None})
        async with guarded_work(service) as work:
            conn = await work.connection()
            await conn.execute(_insert_missing(service.dialect), rows)
        self._known.update(missing)

    async def run_due(self) -> int:
        """Claim and run every tick due now; answers how many ran."""
        service = self._service
        names = service.recurring.names
        if not names:
            return 0
        await self.ensure_rows()
        now = clock.now()
        async with service.engine.connect() as conn:
            due = (await conn.execute(_DUE, {"names": list(names), "now": now})).all()
        ran = 0
        for row in sorted(due, key=lambda r: (r.next_at, r.name)):
            timer = service.recurring.get(row.name)
            assert timer is not None
            if await self._claim(timer, row.next_at, now):
                ran += 1
                missed = 1 + int((now - row.next_at) / timer.every)
                await self._run(timer, Tick(timer.name, row.next_at, missed))
        return ran

    async def fire_now(self, name: str) -> str | None:
        """Run one context timer's tick now (an operator's `POST /api/admin/timers/{name}/fire`),
        claimed like a due tick, so it runs once even when a scheduler claims the same tick; its
        next tick then comes `every` from now. "fired", "failed", "busy" (another claim won), or
        None (no such timer)."""
        timer = self._service.recurring.get(name)
        if timer is None:
            return None
        await self.ensure_rows()
        now = clock.now()
        async with self._service.engine.connect() as conn:
            seen = (await conn.execute(_NEXT, {"tick": name})).scalar()
        if seen is None or not await self._claim(timer, seen, now):
            return "busy"
        return await self._run(timer, Tick(timer.name, now, 1))

    async def _claim(self, timer: Timer, seen: datetime, now: datetime) -> bool:
        params = {"tick": timer.name, "seen": seen, "next": now + timer.every, "now": now}
        async with guarded_work(self._service) as work:
            conn = await work.connection()
            result = await conn.execute(_CLAIM, params)
        return bool(result.rowcount == 1)

    async def _run(self, timer: Timer, tick: Tick) -> str:
        correlation = str(new_id())
        fields: dict[str, Any] = {
            "correlation_id": correlation,
            "timer": timer.name,
            "scheduled_at": tick.scheduled_at,
            "coalesced": tick.coalesced,
        }
        try:
            with use_correlation_id(correlation), use_principal(SYSTEM):
                async with self._service.transaction() as work:
                    await timer.handler(tick, work)
        except Exception as exc:  # noqa: BLE001 - the next tick comes at its time
            error = f"{type(exc).__name__}: {exc}"
            log_fact("tick_failed", logging.ERROR, {**fields, "error": error})
            return "failed"
        log_fact("tick_run", logging.INFO, fields)
        return "fired"
