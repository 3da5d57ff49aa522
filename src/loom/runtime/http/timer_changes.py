"""Operators' changes to pending timers: reschedule and cancel (`timer_admin.py` routes them).

A timeout (named by its job id) is changed by one guarded statement: armed, and no live lease on
it. A scheduler that claimed it first is firing it: the change is a 409 ("list the timers
again"), as `fire` answers; a scheduler that claims it after the change sees the new `due_at`
(reschedule) or no row (cancel). A rescheduled timeout starts again from its attempts so far.

A context timer (named by its name) has its next tick moved (reschedule) by a plain UPDATE of its
`__loom_ticks` row: a scheduler that read the old `next_at` claims it by compare-and-set, fails,
and reads the new one. It cannot be cancelled: it ticks by the model's schedule (a 409 says so).

Each change writes its audit row in its own transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, Protocol
from uuid import UUID

from fastapi import Request
from pydantic import AwareDatetime, BaseModel, ConfigDict
from sqlalchemy import ColumnElement, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.http.audit import write_audit
from loom.runtime.processes.scheduler import Scheduler
from loom.runtime.processes.tables import ARMED, ticks, timers
from loom.runtime.processes.timers import ANNOUNCE, announcement, of_tenant, tenant_of_row
from loom.runtime.storage.work import Units
from loom.runtime.values import clock
from loom.runtime.values.errors import ConcurrencyConflict, NotFound


class TimerAdminHost(Units, Protocol):
    """What the timer routes need of the service: its scheduler (to fire a timer now), its
    tables, and whether it uses processes at all."""

    @property
    def scheduler(self) -> Scheduler: ...

    @property
    def uses_processes(self) -> bool: ...


t = timers.c
Kind = Literal["timeout", "timer"]


class RescheduleIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    due_at: AwareDatetime  # ISO 8601 with an offset: a time without one names no instant


class TimerChangedOut(BaseModel):
    id: str
    kind: Kind
    due_at: datetime  # reschedule: when it is due now; cancel: when it was


def job_id(id: str) -> UUID | None:
    """`id` as a timeout's job id; None: it names a context timer."""
    try:
        return UUID(id)
    except ValueError:
        return None


def _free(now: datetime) -> ColumnElement[bool]:
    """No live lease holds the row: no scheduler is firing it."""
    return or_(t.claimed_until.is_(None), t.claimed_until <= now)


async def reschedule(
    service: TimerAdminHost, request: Request, id: str, due_at: datetime, tenant: str | None
) -> TimerChangedOut:
    """Move the armed timeout `id` (a job id, of `tenant`'s instances when given), else the
    context timer named `id` (the operator's only), to `due_at`."""
    now = clock.now()
    job = job_id(id)
    if not service.uses_processes or (job is None and tenant is not None):
        raise _missing(id)
    if job is None:
        await service.scheduler.ticks.ensure_rows()  # a timer this service never looked at yet
    async with service.transaction() as work:
        conn = await work.connection()
        if job is None:
            moved = update(ticks).where(ticks.c.name == id).values(next_at=due_at)
            if (await conn.execute(moved)).rowcount != 1:
                raise _missing(id)
            kind: Kind = "timer"
            target_tenant = None
        else:
            where = (t.job_id == job, t.status == ARMED, *of_tenant(tenant))
            stmt = (
                update(timers)
                .where(*where, _free(now))
                .values(due_at=due_at, available_at=due_at)
                .returning(t.process, t.tenant)
            )
            row = (await conn.execute(stmt)).first()
            if row is None:
                raise await _why_not(conn, id, where)
            if service.dialect == "postgresql":  # the running services wake for it
                await conn.execute(ANNOUNCE, {"wake": announcement(row.process, due_at)})
            kind, target_tenant = "timeout", tenant_of_row(row.tenant)
        params = {"due_at": due_at.isoformat()}
        await write_audit(conn, request, "reschedule", [id], params, kind, target_tenant)
    if job is None:
        await service.scheduler.ticks.refresh()
    else:
        service.scheduler.expect(due_at)
    return TimerChangedOut(id=id, kind=kind, due_at=due_at)


async def cancel(
    service: TimerAdminHost, request: Request, id: str, tenant: str | None
) -> TimerChangedOut:
    """Disarm the armed timeout `id` (a job id, of `tenant`'s instances when given)."""
    now = clock.now()
    job = job_id(id)
    if not service.uses_processes:
        raise _missing(id)
    if job is None:
        if tenant is None and await _is_tick(service, id):
            raise ConcurrencyConflict(
                "Timer",
                id,
                f"{id} is a context timer: it ticks by the model's schedule and cannot be "
                "cancelled; reschedule its next tick instead",
            )
        raise _missing(id)
    where = (t.job_id == job, t.status == ARMED, *of_tenant(tenant))
    async with service.transaction() as work:
        conn = await work.connection()
        stmt = delete(timers).where(*where, _free(now)).returning(t.due_at, t.tenant)
        row = (await conn.execute(stmt)).first()
        if row is None:
            raise await _why_not(conn, id, where)
        target_tenant = tenant_of_row(row.tenant)
        await write_audit(conn, request, "cancel", [id], {}, "timeout", target_tenant)
    service.scheduler.forget_timeouts()
    return TimerChangedOut(id=id, kind="timeout", due_at=row.due_at)


async def _is_tick(service: TimerAdminHost, name: str) -> bool:
    await service.scheduler.ticks.ensure_rows()
    async with service.engine.connect() as conn:
        found = await conn.execute(select(ticks.c.name).where(ticks.c.name == name))
        return found.first() is not None


async def _why_not(
    conn: AsyncConnection, id: str, where: tuple[ColumnElement[bool], ...]
) -> Exception:
    """The error for a timeout the guarded statement did not change: being fired, or none."""
    armed = (await conn.execute(select(t.job_id).where(*where))).first()
    if armed is None:
        return _missing(id)
    return ConcurrencyConflict(
        "Timer", id, f"timeout {id} is being fired right now; list the timers again"
    )


def _missing(id: str) -> NotFound:
    return NotFound("Timer", id, f"no pending timeout or context timer has the id {id}")
