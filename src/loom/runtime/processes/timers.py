"""`service.timeouts` (who handles the timeouts of each process) and `service.timers` (the queue
of armed and dead timeouts: dead letters, redrive, counts, the next due instant).

A timeout handler is `async def handler(due: TimeoutDue, work: Work) -> None`; the scheduler runs
it in `work`, a transaction of its own, as the system principal (of the timeout's tenant, for a
tenanted context's), with the correlation id of the step that armed the timeout. A handler built on a `ProcessRunner` calls
`runner.timeout(Process, due, step, work=work)`, which runs the step only while `due.job_id` is
still the armed job.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy import ColumnElement, String, and_, bindparam, case, func, select, type_coerce

from loom.runtime.messaging.channels import Backoff
from loom.runtime.processes.model import DeadTimeout, TimeoutDue
from loom.runtime.processes.tables import ARMED, DEAD, ticks, timers
from loom.runtime.storage.lease import LeasedQueue
from loom.runtime.storage.work import Units, Work
from loom.runtime.values import clock
from loom.runtime.values.logs import log_fact
from loom.runtime.values.types import UtcDateTime

TimeoutHandler = Callable[[TimeoutDue, Work], Awaitable[None]]
t = timers.c
# the scheduler's queue: it claims only the timeouts of the processes its service handles
timer_queue = LeasedQueue(
    timers,
    key="job_id",
    ready=ARMED,
    dead=DEAD,
    order=("available_at", "job_id"),
    returning=(
        "job_id",
        "process",
        "tenant",
        "key",
        "name",
        "due_at",
        "attempts",
        "correlation_id",
        "trace_context",
    ),
    only=t.process.in_(bindparam("processes", expanding=True)),
)

# PostgreSQL: a transaction that arms a timeout due soon also sends `pg_notify(TIMERS_CHANNEL,
# announcement(process, due))`, delivered only if it commits; every replica's scheduler LISTENs
# and wakes by `due` (a later timeout is found by the replicas' next poll, in time)
TIMERS_CHANNEL = "loom_timers"
ANNOUNCE = select(func.pg_notify(TIMERS_CHANNEL, bindparam("wake", type_=String())))


def announcement(process: str, due: datetime) -> str:
    return f"{due.timestamp():.6f} {process}"


def parse_announcement(payload: str) -> tuple[str, datetime] | None:
    """(process, due) of an announcement; None for anything else."""
    stamp, _, process = payload.partition(" ")
    try:
        return process, datetime.fromtimestamp(float(stamp), UTC)
    except (ValueError, OverflowError, OSError):
        return None


@dataclass(frozen=True, slots=True)
class Registered:
    process: str
    handler: TimeoutHandler
    max_attempts: int
    backoff: Backoff


class TimeoutHandlers:
    """`service.timeouts`: one handler per process name."""

    def __init__(self) -> None:
        self._by_process: dict[str, Registered] = {}

    def register(
        self,
        process: str,
        handler: TimeoutHandler,
        *,
        max_attempts: int = 5,
        backoff: Backoff | None = None,
    ) -> None:
        """Deliver the due timeouts of `process` to `handler`. A failing handler is retried
        after `backoff.delay(attempt)`; after `max_attempts` failures the timeout is dead (kept,
        listed with the dead letters, redrivable)."""
        if process in self._by_process:
            raise ValueError(f"the timeouts of {process} already have a handler")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._by_process[process] = Registered(process, handler, max_attempts, backoff or Backoff())

    def get(self, process: str) -> Registered | None:
        return self._by_process.get(process)

    @property
    def processes(self) -> tuple[str, ...]:
        """The processes whose timeouts this service fires (it claims no other)."""
        return tuple(self._by_process)

    def __len__(self) -> int:
        return len(self._by_process)


def _dead(row: Any) -> DeadTimeout:
    return DeadTimeout(
        job_id=row.job_id,
        process=row.process,
        key=row.key,
        name=row.name,
        due_at=row.due_at,
        attempts=row.attempts,
        last_error=row.last_error,
        correlation_id=row.correlation_id,
        tenant=tenant_of_row(row.tenant),
    )


def of_tenant(tenant: str | None) -> tuple[ColumnElement[bool], ...]:
    """The condition keeping one tenant's timeouts; none (every row) for None."""
    return () if tenant is None else (t.tenant == tenant,)


def tenant_of_row(tenant: str) -> str | None:
    """A stored timer's tenant as it is shown and run in: None for an untenanted one."""
    return tenant or None


_DEAD_COLUMNS = (
    t.job_id,
    t.process,
    t.tenant,
    t.key,
    t.name,
    t.due_at,
    t.attempts,
    t.last_error,
    t.correlation_id,
)


class Expects(Protocol):
    """The scheduler of this service, told when a timeout it fires becomes due."""

    def expect(self, at: datetime) -> None: ...


class TimerQueue:
    """`service.timers`: the stored timeouts as a queue (the scheduler does the firing)."""

    def __init__(self, service: Units, scheduler: Expects) -> None:
        self._service = service
        self._scheduler = scheduler

    async def dead_letters(
        self, limit: int = 50, offset: int = 0, tenant: str | None = None, status: str = DEAD
    ) -> list[DeadTimeout]:
        """Dead timeouts, earliest due first (`tenant`: that tenant's instances' only; `status`
        ARCHIVED: the archived ones)."""
        stmt = (
            select(*_DEAD_COLUMNS)
            .where(t.status == status, *of_tenant(tenant))
            .order_by(t.due_at, t.job_id)
            .limit(limit)
            .offset(offset)
        )
        async with self._service.engine.connect() as conn:
            return [_dead(r) for r in (await conn.execute(stmt)).all()]

    async def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Timeouts per status: {"armed": n, "dead": n} (`tenant`: its instances')."""
        stmt = select(t.status, func.count()).where(*of_tenant(tenant)).group_by(t.status)
        async with self._service.engine.connect() as conn:
            found = {status: int(n) for status, n in (await conn.execute(stmt)).all()}
        return {status: found.get(status, 0) for status in (ARMED, DEAD)}

    async def redrive(self, job_id: UUID, tenant: str | None = None) -> bool:
        """Arm one dead timeout again, due now, attempts from zero; False if there is none
        (`tenant`: none of that tenant's)."""
        return bool(await self._redrive(and_(t.job_id == job_id, *of_tenant(tenant))))

    async def redrive_many(self, job_ids: Sequence[UUID], tenant: str | None = None) -> int:
        """Arm these dead timeouts again, in one transaction; answers how many were dead
        (`tenant`: of that tenant's instances)."""
        return await self._redrive(and_(t.job_id.in_(list(job_ids)), *of_tenant(tenant)))

    async def redrive_all(self) -> int:
        """Arm every dead timeout again; answers how many."""
        return await self._redrive(None)

    async def _redrive(self, where: ColumnElement[bool] | None) -> int:
        service = self._service
        now = clock.now()
        stmt = timer_queue.redrive(*(() if where is None else (where,)))
        async with service.transaction() as work:
            conn = await work.connection()
            rows = (await conn.execute(stmt.returning(*_DEAD_COLUMNS), {"now": now})).all()
            if service.dialect == "postgresql":  # the running services fire them now
                for process in sorted({row.process for row in rows}):
                    await conn.execute(ANNOUNCE, {"wake": announcement(process, now)})
        for row in rows:
            log_fact("timeout_redriven", logging.INFO, _fields(_dead(row)))
        if rows:
            self._scheduler.expect(now)
        return len(rows)

    async def next_due(
        self, processes: tuple[str, ...] | None = None, registered_ticks: tuple[str, ...] = ()
    ) -> datetime | None:
        """The earliest instant something becomes claimable: an armed timeout (of `processes`,
        default any; after the lease that holds it, if any) or the next tick of one of
        `registered_ticks`."""
        async with self._service.engine.connect() as conn:
            if processes is None:
                found = [(await conn.execute(_FIRST_TIMEOUT)).scalar()]
            else:
                params = {"processes": list(processes)}
                found = [(await conn.execute(_FIRST_TIMEOUT_OF, params)).scalar()]
            if registered_ticks:
                params = {"names": list(registered_ticks)}
                found.append((await conn.execute(_FIRST_TICK, params)).scalar())
        return min((x for x in found if x is not None), default=None)


# built once: a statement built per call costs more than the database's answer (the virtual
# clock asks at every instant it walks through)
_claimable = case((t.claimed_until > t.available_at, t.claimed_until), else_=t.available_at)
_FIRST_TIMEOUT = select(type_coerce(func.min(_claimable), UtcDateTime)).where(t.status == ARMED)
_FIRST_TIMEOUT_OF = _FIRST_TIMEOUT.where(t.process.in_(bindparam("processes", expanding=True)))
_FIRST_TICK = select(type_coerce(func.min(ticks.c.next_at), UtcDateTime)).where(
    ticks.c.name.in_(bindparam("names", expanding=True))
)


def _fields(dead: DeadTimeout | TimeoutDue) -> dict[str, Any]:
    tenant = {} if dead.tenant is None else {"tenant": dead.tenant}
    return {
        "correlation_id": dead.correlation_id,
        "process": dead.process,
        **tenant,
        "key": dead.key,
        "timeout": dead.name,
        "job_id": str(dead.job_id),
    }
