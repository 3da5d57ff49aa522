"""Context timers: recurring sweeps (`service.recurring`), each tick run once across replicas.

`__loom_ticks` holds one row per timer: when its next tick is due (the row is created `every`
after the first start). A scheduler whose clock has passed `next_at` claims the tick with a
compare-and-set, `UPDATE … SET next_at = :next WHERE name = :name AND next_at = :seen`: of several
replicas that saw the same `next_at`, exactly one changes the row, and only that one runs the
tick. The claim is the first statement of the handler's own transaction, so a tick costs one
commit and its claim is durable exactly when its work is (on PostgreSQL the claim skips a row
another replica's tick transaction holds: that replica is running the tick, so this one must not
wait for it). A tick whose handler fails rolls back, then is claimed alone, in a transaction of
its own, logged (`tick_failed`) and not retried; the next tick comes at its time.

The runner keeps each timer's `next_at` as it last read or wrote it, so it needs no read to know
when the next tick is due: only a claim changes the row, and a claim only moves it later, so a
value another replica moved on is at worst early; that replica's claim then makes this one's fail,
and a failed claim reads the row again. The background loop reads the rows at each idle
(`refresh`), which also covers rows changed by hand.

A timer of a tenanted context (`register(…, tenanted=context)`) runs once per tenant that has
rows: the distinct tenants of the context's tables, each as the system principal of that tenant
(`system_of`), each in a unit of work of its own, so one tenant's failure (logged `tick_failed`
with its tenant) neither rolls back nor stops another's. Its claim then commits alone first: a
tick claimed and cut short (a crash between tenants) is not run again for the tenants it did not
reach; the next tick is, as after a failure.

Catch-up: after downtime, every missed tick is coalesced into ONE run (`Tick.coalesced` says how
many it stands for), and the schedule continues `every` from now. A sweep is derived from the state
it reads ("expire what is overdue"), so running it once covers every missed tick; running it N
times back to back would only repeat the same work.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import MetaData, Table, bindparam, select, union, update

from loom.runtime.messaging.claimant import guarded_work
from loom.runtime.processes.model import Tick
from loom.runtime.processes.tables import ticks
from loom.runtime.storage.dialects import dialect_insert
from loom.runtime.storage.hosts import UnitHost
from loom.runtime.storage.mapping import tenant_column
from loom.runtime.storage.work import Units, Work
from loom.runtime.values import clock
from loom.runtime.values.ids import new_id
from loom.runtime.values.logs import log_fact, use_correlation_id
from loom.runtime.values.principal import SYSTEM, system_of, use_principal

TickHandler = Callable[[Tick, Work], Awaitable[None]]
k = ticks.c
_NEXT = select(k.name, k.next_at).where(k.name.in_(bindparam("names", expanding=True)))
_CLAIM = (
    update(ticks)
    .where(k.name == bindparam("tick"), k.next_at == bindparam("seen"))
    .values(next_at=bindparam("next"), last_run_at=bindparam("now"))
)
_CLAIMS = {
    "sqlite": _CLAIM,  # one writer at a time: no row another transaction holds
    "postgresql": _CLAIM.where(
        k.name.in_(
            select(k.name).where(k.name == bindparam("tick")).with_for_update(skip_locked=True)
        )
    ),
}


@dataclass(frozen=True, slots=True)
class Timer:
    name: str
    every: timedelta
    handler: TickHandler
    #: the tenanted context whose tenants it runs for, once each; None: once, as SYSTEM
    tenanted: str | None = None


class Recurring:
    """`service.recurring`: the context timers of the service."""

    def __init__(self) -> None:
        self._timers: dict[str, Timer] = {}

    def register(
        self, name: str, every: timedelta, handler: TickHandler, *, tenanted: str | None = None
    ) -> None:
        """Run `handler(tick, work)` every `every`, once per tick across replicas, in a
        transaction of its own, as the system principal; with `tenanted` (a tenanted context's
        name), once per tenant with rows in that context's tables, as that tenant's."""
        if name in self._timers:
            raise ValueError(f"a context timer is already named {name!r}")
        if every <= timedelta(0):
            raise ValueError(f"timer {name}: `every` must be positive")
        self._timers[name] = Timer(name, every, handler, tenanted)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._timers)

    def get(self, name: str) -> Timer | None:
        return self._timers.get(name)

    def __len__(self) -> int:
        return len(self._timers)


def _insert_missing(dialect: str) -> Any:
    return dialect_insert(dialect)(ticks).on_conflict_do_nothing()


class TickHost(UnitHost, Units, Protocol):
    """What running context timers needs of the service: units of work, its timers, and the
    tables of its model (to find the tenants of a tenanted context)."""

    @property
    def recurring(self) -> Recurring: ...

    @property
    def metadata(self) -> MetaData: ...


class TickRunner:
    """The scheduler's half for context timers."""

    def __init__(self, service: TickHost) -> None:
        self._service = service
        self._known: set[str] = set()
        self._next: dict[str, datetime] = {}  # next_at of each timer, as last read or written
        self._ahead: list[tuple[datetime, str]] = []  # a heap: ticks claimed, not run yet

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

    async def refresh(self) -> None:
        """Read the next tick of every registered timer (creating the rows it lacks)."""
        names = self._service.recurring.names
        if not names:
            return
        await self.ensure_rows()
        async with self._service.engine.connect() as conn:
            rows = (await conn.execute(_NEXT, {"names": list(names)})).all()
        self._next = {row.name: row.next_at for row in rows}

    async def next_due(self) -> datetime | None:
        """The earliest next tick: one claimed ahead, or a row as this runner last read or
        wrote it."""
        if len(self._next) < len(self._service.recurring.names):
            await self.refresh()
        ahead = [self._ahead[0][0]] if self._ahead else []
        return min([*ahead, *self._next.values()], default=None)

    async def run_due(self, until: datetime | None = None) -> int:
        """Claim and run every tick due now; answers how many ran. With `until` (a virtual
        clock's promise that time walks to `until` and runs this again at each instant due on
        the way), a tick due exactly now claims, in the same statement, its successors through
        `until`; each of them runs at its own instant, in a unit of work of its own, without a
        claim of its own."""
        service = self._service
        if not service.recurring.names:
            return 0
        if len(self._next) < len(service.recurring.names):
            await self.refresh()
        now = clock.now()
        ran = 0
        for seen, name in sorted((at, name) for name, at in self._next.items() if at <= now):
            timer = service.recurring.get(name)
            assert timer is not None
            n = 1 if until is None or seen != now else 1 + int((until - now) / timer.every)
            if n > 1:
                last = now + (n - 1) * timer.every
                if await self._claim(timer, seen, last + timer.every, last):
                    for i in range(n):
                        heapq.heappush(self._ahead, (now + i * timer.every, name))
                continue
            missed = 1 + int((now - seen) / timer.every)
            if await self._run(timer, Tick(timer.name, seen, missed), seen, now) is not None:
                ran += 1
        # a clock that stepped to each instant finds one per timer; one that could not (it ran
        # straight to `until`) finds several, which coalesce, as missed ticks do
        missed_ahead: dict[str, list[datetime]] = {}
        while self._ahead and self._ahead[0][0] <= now:
            at, name = heapq.heappop(self._ahead)
            missed_ahead.setdefault(name, []).append(at)
        for name, instants in missed_ahead.items():
            timer = service.recurring.get(name)
            assert timer is not None
            await self._run(timer, Tick(name, instants[0], len(instants)))
            ran += 1
        return ran

    async def fire_now(self, name: str) -> str | None:
        """Run one context timer's tick now (an operator's `POST /api/admin/timers/{name}/fire`),
        claimed like a due tick, so it runs once even when a scheduler claims the same tick; its
        next tick then comes `every` from now. "fired", "failed", "busy" (another claim won), or
        None (no such timer)."""
        timer = self._service.recurring.get(name)
        if timer is None:
            return None
        await self.refresh()
        now = clock.now()
        seen = self._next.get(name)
        outcome = None if seen is None else await self._run(timer, Tick(name, now, 1), seen, now)
        return outcome or "busy"

    async def _claim(self, timer: Timer, seen: datetime, next_at: datetime, now: datetime) -> bool:
        """Claim alone, in a transaction of its own, the tick whose row says `seen`."""
        params = {"tick": timer.name, "seen": seen, "next": next_at, "now": now}
        async with guarded_work(self._service) as work:
            conn = await work.connection()
            claimed = (await conn.execute(_CLAIMS[self._service.dialect], params)).rowcount == 1
        await self._claimed(timer, claimed, next_at)
        return bool(claimed)

    async def _claimed(self, timer: Timer, claimed: bool, next_at: datetime) -> None:
        if claimed:
            self._next[timer.name] = next_at
        else:  # another claim won: its row is news
            await self.refresh()

    async def _run(
        self, timer: Timer, tick: Tick, seen: datetime | None = None, now: datetime | None = None
    ) -> str | None:
        """Run a tick: claimed ahead already, or (`seen`) claimed now, in the handler's own
        transaction. "fired", "failed", or None when another claim won. Traced, a tick is the
        root of a trace of its own (`timer <name>`)."""
        tracer = self._service.tracer
        if tracer is None:
            return await self._tick(timer, tick, seen, now)
        with tracer.ticked(timer.name) as span:
            outcome = await self._tick(timer, tick, seen, now)
            span.set_attribute("loom.outcome", outcome or "claimed_elsewhere")
            return outcome

    async def _tick(
        self, timer: Timer, tick: Tick, seen: datetime | None, now: datetime | None
    ) -> str | None:
        service = self._service
        claim: dict[str, Any] | None = None
        if seen is not None and now is not None:
            claim = {"tick": timer.name, "seen": seen, "next": now + timer.every, "now": now}
        correlation = str(new_id())
        fields: dict[str, Any] = {
            "correlation_id": correlation,
            "timer": timer.name,
            "scheduled_at": tick.scheduled_at,
            "coalesced": tick.coalesced,
        }
        if timer.tenanted is not None:
            return await self._run_tenants(timer, tick, claim, fields)
        claimed = True
        try:
            with use_correlation_id(correlation), use_principal(SYSTEM):
                async with service.transaction() as work:
                    if claim is not None:
                        conn = await work.connection()
                        result = await conn.execute(_CLAIMS[service.dialect], claim)
                        claimed = result.rowcount == 1
                    if claimed:
                        await timer.handler(tick, work)
        except Exception as exc:  # noqa: BLE001 - the next tick comes at its time
            if claim is not None:
                # the claim rolled back with the handler's work: claim alone, not to retry it
                await self._claim(timer, claim["seen"], claim["next"], claim["now"])
            error = f"{type(exc).__name__}: {exc}"
            log_fact("tick_failed", logging.ERROR, {**fields, "error": error})
            return "failed"
        if claim is not None:
            await self._claimed(timer, claimed, claim["next"])
        if not claimed:
            return None
        log_fact("tick_run", logging.INFO, fields)
        return "fired"

    async def _run_tenants(
        self, timer: Timer, tick: Tick, claim: dict[str, Any] | None, fields: dict[str, Any]
    ) -> str | None:
        """A tenanted context's tick: claimed alone, then run once per tenant with rows, each
        in a unit of work of its own as that tenant's system principal. "fired" when every
        tenant's run committed, "failed" when one failed (the others still ran)."""
        if claim is not None and not await self._claim(
            timer, claim["seen"], claim["next"], claim["now"]
        ):
            return None
        service = self._service
        assert timer.tenanted is not None
        outcome = "fired"
        for tenant in await self._tenants(timer.tenanted):
            at = {**fields, "tenant": tenant}
            try:
                with use_correlation_id(fields["correlation_id"]), use_principal(system_of(tenant)):
                    async with service.transaction() as work:
                        await timer.handler(tick, work)
            except Exception as exc:  # noqa: BLE001 - the other tenants still run
                error = f"{type(exc).__name__}: {exc}"
                log_fact("tick_failed", logging.ERROR, {**at, "error": error})
                outcome = "failed"
                continue
            log_fact("tick_run", logging.INFO, at)
        return outcome

    async def _tenants(self, context: str) -> list[str]:
        """The tenants with rows in `context`'s tables, in order."""
        columns = [
            tenant_column(table)
            for table in self._service.metadata.tables.values()
            if _of_context(table, context)
        ]
        selects = [select(c.label("tenant")).distinct() for c in columns if c is not None]
        if not selects:
            return []
        async with self._service.engine.connect() as conn:
            stmt = selects[0] if len(selects) == 1 else union(*selects)
            found = (await conn.execute(stmt)).scalars().all()
        return sorted(found)


def _of_context(table: Table, context: str) -> bool:
    origin = table.info.get("loom", {}).get("origin", "")
    return isinstance(origin, str) and origin.startswith(f"{context}.")
