# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""Operators' hold on time: the pending timers, and firing one now (tag "admin").

GET  /api/admin/timers?limit&offset   -> {items, limit, offset, total}
POST /api/admin/timers/{id}/fire      -> {id, kind, outcome}, or a 404 / 409 problem
POST /api/admin/timers/{id}/reschedule {due_at} -> {id, kind, due_at} (`timer_changes.py`)
POST /api/admin/timers/{id}/cancel     -> {id, kind, due_at}, or a 409 for a context timer

The page lists the armed timeouts (`kind: "timeout"`, keyed by `job_id`), earliest due first, then
the context timers (`kind: "timer"`, keyed by their name, e.g. `Scheduling.expireUnconfirmed`) with
their next tick. Like the dead letters, the page is the operator's, across tenants: a timeout of
a tenanted context's instance shows its `tenant`, and fired here it runs in that tenant. An admin
whose token names a tenant sees and fires that tenant's timeouts only (another's job id is a 404)
and no context timer (it runs for every tenant). Dead timeouts are dead letters
(`/api/admin/dead-letters`), not listed here.

Firing runs the handler in this service now, claimed like the scheduler claims (a lease on the
timeout's row; the compare-and-set on the timer's next tick), so a timeout fired here while a
scheduler fires it runs once: the loser answers 409 (or `stale`). A fired timeout is consumed as
if it had come due; a fired context timer's next tick comes `every` from now.

`make_due` is what `loom timers fire` does on the tables, without the service's handlers: the
timeout (or the timer's next tick) becomes due now, and the running services fire it (announced
on PostgreSQL, like a redriven dead letter).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Literal, cast
from uuid import UUID

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from sqlalchemy import bindparam, func, select, update

from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.audit import audited
from loom.runtime.http.timer_changes import (
    RescheduleIn,
    TimerAdminHost,
    TimerChangedOut,
    cancel,
    job_id,
    reschedule,
)
from loom.runtime.processes.tables import ARMED, ticks, timers
from loom.runtime.processes.timers import ANNOUNCE, announcement, of_tenant, tenant_of_row
from loom.runtime.values import clock
from loom.runtime.values.errors import ConcurrencyConflict, NotFound
from loom.runtime.values.schemas import Page, PageLimit, PageOffset

t = timers.c
k = ticks.c
_TIMEOUTS = (
    select(
        t.job_id,
        t.process,
        t.tenant,
        t.key,
        t.name,
        t.due_at,
        t.attempts,
        t.correlation_id,
        t.available_at,
        t.claimed_until,
    )
    .where(t.status == ARMED)
    .order_by(t.due_at, t.job_id)
    .limit(bindparam("n"))
    .offset(bindparam("skip"))
)
_N_TIMEOUTS = select(func.count()).select_from(timers).where(t.status == ARMED)
_TENANT_OF = select(t.tenant).where(t.job_id == bindparam("id"))
_TICKS = select(k.name, k.next_at, k.last_run_at).order_by(k.next_at, k.name)
_TIMEOUT_DUE_NOW = (
    update(timers)
    .where(t.job_id == bindparam("id"), t.status == ARMED)
    .values(available_at=bindparam("now"))
    .returning(t.process)
)
_TICK_DUE_NOW = update(ticks).where(k.name == bindparam("id")).values(next_at=bindparam("now"))


# due for longer than this and not taken by a scheduler: overdue (none runs, or it lags behind)
OVERDUE_AFTER = timedelta(minutes=1)
# armed: waiting for its time; due: its time came; overdue: over OVERDUE_AFTER ago; leased: a
# scheduler (or an operator's fire) is running its handler now
TimerStatus = Literal["armed", "due", "overdue", "leased"]


def timer_status(
    available_at: datetime, claimed_until: datetime | None, now: datetime
) -> TimerStatus:
    """A pending timer's status, as words: the console shows it, not only its colour."""
    if claimed_until is not None and claimed_until > now:
        return "leased"
    if available_at > now:
        return "armed"
    return "overdue" if now - available_at > OVERDUE_AFTER else "due"


class PendingTimeoutOut(BaseModel):
    kind: Literal["timeout"] = "timeout"
    job_id: UUID
    process: str
    key: str
    timeout: str
    due_at: datetime
    attempts: int
    correlation_id: str | None
    tenant: str | None = None  # a tenanted context's instance's; null: untenanted
    status: TimerStatus = "armed"


class PendingTimerOut(BaseModel):
    kind: Literal["timer"] = "timer"
    timer: str
    due_at: datetime  # its next tick
    last_run_at: datetime | None
    status: TimerStatus = "armed"  # never leased: a tick is claimed by compare-and-set


TimerItem = PendingTimeoutOut | PendingTimerOut
Outcome = Literal["fired", "failed", "stale"]


class FiredOut(BaseModel):
    id: str
    kind: Literal["timeout", "timer"]
    # fired: the handler committed; failed: it raised (a timeout is retried with backoff, as
    # after any failed attempt); stale: the timeout was disarmed meanwhile
    outcome: Outcome


async def timers_page(
    service: TimerAdminHost, limit: int, offset: int, tenant: str | None = None
) -> tuple[list[TimerItem], int]:
    """One page of the pending timers (timeouts first, then context timers), and the total.
    With `tenant`: that tenant's instances' timeouts only (a context timer runs for every
    tenant, so it is the operator's)."""
    if not service.uses_processes:
        return [], 0
    await service.scheduler.ticks.ensure_rows()  # a timer this service never looked at yet
    items: list[TimerItem] = []
    scoped = of_tenant(tenant)
    now = clock.now()
    async with service.engine.connect() as conn:
        n_timeouts = int((await conn.execute(_N_TIMEOUTS.where(*scoped))).scalar() or 0)
        found = await conn.execute(_TIMEOUTS.where(*scoped), {"n": limit, "skip": offset})
        items += [_timeout_out(r, now) for r in found.all()]
        tick_rows = (await conn.execute(_TICKS)).all() if tenant is None else []
    skip = max(0, offset - n_timeouts)
    items += [_timer_out(tick, now) for tick in tick_rows[skip : skip + limit - len(items)]]
    return items, n_timeouts + len(tick_rows)


async def pending_timer(service: TimerAdminHost, id: str, tenant: str | None) -> TimerItem:
    """The armed timeout with job id `id` (of `tenant`'s instances when given), else the context
    timer named `id` (the operator's only); a 404 when there is none."""
    job = job_id(id)
    found: Any = None
    if service.uses_processes and (job is not None or tenant is None):
        await service.scheduler.ticks.ensure_rows()
        async with service.engine.connect() as conn:
            if job is not None:
                query = _TIMEOUTS.where(t.job_id == job, *of_tenant(tenant))
                armed = (await conn.execute(query, {"n": 1, "skip": 0})).first()
                found = _timeout_out(armed, clock.now()) if armed is not None else None
            else:
                tick = (await conn.execute(_TICKS.where(k.name == id))).first()
                found = _timer_out(tick, clock.now()) if tick is not None else None
    if found is None:
        raise NotFound("Timer", id, f"no pending timeout or context timer has the id {id}")
    return cast(TimerItem, found)


def _timeout_out(r: Any, now: datetime) -> PendingTimeoutOut:
    return PendingTimeoutOut(
        job_id=r.job_id,
        process=r.process,
        key=r.key,
        timeout=r.name,
        due_at=r.due_at,
        attempts=r.attempts,
        correlation_id=r.correlation_id,
        tenant=tenant_of_row(r.tenant),
        status=timer_status(r.available_at, r.claimed_until, now),
    )


def _timer_out(tick: Any, now: datetime) -> PendingTimerOut:
    return PendingTimerOut(
        timer=tick.name,
        due_at=tick.next_at,
        last_run_at=tick.last_run_at,
        status=timer_status(tick.next_at, None, now),
    )


async def fire(service: TimerAdminHost, id: str, tenant: str | None = None) -> FiredOut:
    """Fire the armed timeout with job id `id`, else the context timer named `id`, now. With
    `tenant`: a timeout of that tenant's instances only (a context timer is the operator's)."""
    job = job_id(id)
    outcome: str | None = None
    kind: Literal["timeout", "timer"] = "timeout" if job is not None else "timer"
    if service.uses_processes and (tenant is None or await _of(service, job, tenant)):
        if job is not None:
            outcome = await service.scheduler.fire_now(job)
        else:
            outcome = await service.scheduler.ticks.fire_now(id)
    if outcome is None:
        raise NotFound("Timer", id, f"no pending timeout or context timer has the id {id}")
    if outcome == "busy":
        raise ConcurrencyConflict(
            "Timer", id, f"{kind} {id} is being fired right now; list the timers again"
        )
    assert outcome in ("fired", "failed", "stale")
    return FiredOut(id=id, kind=kind, outcome=outcome)  # type: ignore[arg-type]


async def _of(service: TimerAdminHost, job: UUID | None, tenant: str) -> bool:
    """Whether `job` is a timeout of `tenant`'s instances."""
    if job is None:
        return False
    async with service.engine.connect() as conn:
        return bool((await conn.execute(_TENANT_OF, {"id": job})).scalar() == tenant)


async def make_due(service: TimerAdminHost, id: str) -> str | None:
    """Make the armed timeout `id` (a job id), else the context timer named `id`, due now: the
    running services fire it. Answers "timeout", "timer", or None (no such timer)."""
    now = clock.now()
    job = job_id(id)
    async with service.transaction() as work:
        conn = await work.connection()
        if job is not None:
            process = (await conn.execute(_TIMEOUT_DUE_NOW, {"id": job, "now": now})).scalar()
            if process is None:
                return None
            if service.dialect == "postgresql":  # the running services wake for it
                await conn.execute(ANNOUNCE, {"wake": announcement(process, now)})
            return "timeout"
        result = await conn.execute(_TICK_DUE_NOW, {"id": id, "now": now})
        return "timer" if result.rowcount == 1 else None


def timers_router(route_class: Any, get_service: Callable[..., TimerAdminHost]) -> APIRouter:
    """The timer routes; `get_service` is the app's service dependency."""
    router = admin_routes(route_class)

    @router.get(
        "/api/admin/timers",
        response_model=Page[TimerItem],
        responses=problems(401, 403, 422, 500, 503),
        operation_id="admin_listTimers",
    )
    async def list_timers(
        limit: PageLimit = 50,
        offset: PageOffset = 0,
        service: TimerAdminHost = Depends(get_service),
    ) -> Page[TimerItem]:
        """The armed timeouts, earliest due first, then the context timers with their next
        tick."""
        items, total = await timers_page(service, limit, offset, admin_tenant())
        return Page[TimerItem](items=items, limit=limit, offset=offset, total=total)

    @router.post(
        "/api/admin/timers/{id}/fire",
        response_model=FiredOut,
        responses=problems(401, 403, 404, 409, 413, 422, 500, 503),
        operation_id="admin_fireTimer",
    )
    async def fire_timer(
        id: str, request: Request, service: TimerAdminHost = Depends(get_service)
    ) -> FiredOut:
        """Fire a pending timeout (its job id) or a context timer (its name) now, once, in this
        service."""
        fired = await fire(service, id, admin_tenant())
        await audited(service, request, "fire", [id], {"kind": fired.kind}, fired.outcome)
        return fired

    @router.post(
        "/api/admin/timers/{id}/reschedule",
        response_model=TimerChangedOut,
        responses=problems(401, 403, 404, 409, 413, 422, 500, 503),
        operation_id="admin_rescheduleTimer",
    )
    async def reschedule_timer(
        id: str,
        body: RescheduleIn,
        request: Request,
        service: TimerAdminHost = Depends(get_service),
    ) -> TimerChangedOut:
        """Move a pending timeout (its job id) or a context timer's next tick (its name) to
        `due_at`; a timeout a scheduler is firing right now is a 409."""
        return await reschedule(service, request, id, body.due_at, admin_tenant())

    @router.post(
        "/api/admin/timers/{id}/cancel",
        response_model=TimerChangedOut,
        responses=problems(401, 403, 404, 409, 413, 422, 500, 503),
        operation_id="admin_cancelTimer",
    )
    async def cancel_timer(
        id: str, request: Request, service: TimerAdminHost = Depends(get_service)
    ) -> TimerChangedOut:
        """Disarm a pending timeout (its job id): it never fires. A context timer cannot be
        cancelled (409: it ticks by the model's schedule); a timeout being fired is a 409."""
        return await cancel(service, request, id, admin_tenant())

    return router
