# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""Admin HTTP endpoints for dead letters (tag "admin"):

GET  /api/admin/dead-letters?limit&offset&kind&archived -> {items, limit, offset, total}
POST /api/admin/dead-letters/{id}/redrive            -> 204, or a 404 problem

An admin whose token names a tenant (a tenant's own administrator) sees and redrives that
tenant's dead letters only: another tenant's id is a 404. An admin without one (the operator)
sees every tenant's, each with its `tenant`.

Two kinds of dead letters share the page (dead events first, then dead timeouts; `kind` filters):
durable events whose delivery failed (`kind: "event"`, keyed by `event_id`) and process timeouts
whose handler failed (`kind: "timeout"`, keyed by `job_id`). Redrive takes either id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel
from sqlalchemy import ColumnElement, func, select

from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.audit import audited
from loom.runtime.messaging.outbox import DEAD, Outbox, outbox
from loom.runtime.storage.lease import ARCHIVED
from loom.runtime.storage.work import Units
from loom.runtime.values.errors import NotFound
from loom.runtime.values.schemas import Page, PageLimit, PageOffset

if TYPE_CHECKING:  # the processes load with a service that uses them
    from loom.runtime.processes.timers import TimerQueue


class AdminHost(Units, Protocol):
    """What the dead-letter routes need of the service: its channels' outbox and its timers."""

    @property
    def channels(self) -> Sequence[object]: ...

    @property
    def uses_processes(self) -> bool: ...

    @property
    def outbox(self) -> Outbox: ...

    @property
    def timers(self) -> TimerQueue: ...


class DeadLetterOut(BaseModel):
    kind: Literal["event"] = "event"
    event_id: UUID
    event_type: str
    channel: str
    attempts: int
    last_error: str | None
    occurred_at: datetime
    correlation_id: str
    payload: dict[str, Any]
    # the revision of the model that wrote the event; null: written before events carried one
    model_revision: str | None = None
    # the tenant the event was raised in (a tenanted context's); null: an untenanted event. The
    # admin sees every tenant's dead letters; a redrive replays each in its own tenant
    tenant: str | None = None


class DeadTimeoutOut(BaseModel):
    kind: Literal["timeout"] = "timeout"
    job_id: UUID
    process: str
    key: str
    timeout: str
    due_at: datetime
    attempts: int
    last_error: str | None
    correlation_id: str | None
    # the tenant of a tenanted context's instance (null: untenanted); redriven, it fires there
    tenant: str | None = None


DeadItem = DeadLetterOut | DeadTimeoutOut
Kind = Literal["event", "timeout"]


async def dead_page(
    service: AdminHost,
    limit: int,
    offset: int,
    kind: Kind | None = None,
    tenant: str | None = None,
    archived: tuple[int, int] | None = None,
) -> tuple[list[DeadItem], int]:
    """One page of dead letters of both kinds (events first), and the total (`tenant`: that
    tenant's only; `archived`: the archived ones instead, given their counts)."""
    events = service.channels and kind in (None, "event")
    timeouts = service.uses_processes and kind in (None, "timeout")
    status = DEAD if archived is None else ARCHIVED
    if archived is None:
        n_events = (await service.outbox.counts(tenant))[DEAD] if events else 0
        n_timeouts = (await service.timers.counts(tenant))[DEAD] if timeouts else 0
    else:
        n_events, n_timeouts = archived[0] if events else 0, archived[1] if timeouts else 0
    items: list[DeadItem] = []
    if events and offset < n_events:
        for d in await service.outbox.dead_letters(limit, offset, tenant, status):
            items.append(DeadLetterOut.model_validate(d, from_attributes=True))
    if timeouts and len(items) < limit:
        skip = max(0, offset - n_events)
        for x in await service.timers.dead_letters(limit - len(items), skip, tenant, status):
            items.append(
                DeadTimeoutOut(
                    job_id=x.job_id,
                    process=x.process,
                    key=x.key,
                    timeout=x.name,
                    due_at=x.due_at,
                    attempts=x.attempts,
                    last_error=x.last_error,
                    correlation_id=x.correlation_id,
                    tenant=x.tenant,
                )
            )
    return items, n_events + n_timeouts


async def redrive(service: AdminHost, id: UUID, tenant: str | None = None) -> bool:
    """Redrive the dead event, else the dead timeout, with this id (`tenant`: of that tenant)."""
    if service.channels and await service.outbox.redrive(id, tenant):
        return True
    return bool(service.uses_processes and await service.timers.redrive(id, tenant))


async def archived_counts(service: AdminHost, tenant: str | None) -> tuple[int, int]:
    """(archived events, archived timeouts) of `tenant`."""
    events = timeouts = 0
    async with service.engine.connect() as conn:
        if service.channels:
            o = outbox.c
            q = select(func.count()).where(o.status == ARCHIVED, *of_tenant(o.tenant, tenant))
            events = int((await conn.execute(q)).scalar() or 0)
        if service.uses_processes:
            from loom.runtime.processes.tables import timers

            t = timers.c
            q = select(func.count()).where(t.status == ARCHIVED, *of_tenant(t.tenant, tenant))
            timeouts = int((await conn.execute(q)).scalar() or 0)
    return events, timeouts


def of_tenant(column: ColumnElement[Any], tenant: str | None) -> tuple[ColumnElement[bool], ...]:
    """The condition keeping `tenant`'s rows (by their `column`); none (every row) for None."""
    return () if tenant is None else (column == tenant,)


def admin_router(route_class: Any, get_service: Callable[..., AdminHost]) -> APIRouter:
    """The dead-letter routes; `get_service` is the app's service dependency."""
    router = admin_routes(route_class)

    @router.get(
        "/api/admin/dead-letters",
        response_model=Page[DeadItem],
        responses=problems(401, 403, 422, 500, 503),
        operation_id="admin_listDeadLetters",
    )
    async def list_dead_letters(
        limit: PageLimit = 50,
        offset: PageOffset = 0,
        kind: Kind | None = Query(None),
        archived: bool = Query(False),
        service: AdminHost = Depends(get_service),
    ) -> Page[DeadItem]:
        """Durable events whose delivery failed `max_attempts` times, oldest first, then process
        timeouts whose handler did, earliest due first (`kind` keeps one of the two;
        `archived=true`: the archived ones)."""
        tenant = admin_tenant()
        counts = await archived_counts(service, tenant) if archived else None
        items, total = await dead_page(service, limit, offset, kind, tenant, counts)
        return Page[DeadItem](items=items, limit=limit, offset=offset, total=total)

    @router.post(
        "/api/admin/dead-letters/{id}/redrive",
        status_code=204,
        response_class=Response,
        responses=problems(401, 403, 404, 413, 422, 500, 503),
        operation_id="admin_redriveDeadLetter",
    )
    async def redrive_dead_letter(
        id: UUID, request: Request, service: AdminHost = Depends(get_service)
    ) -> None:
        """Put a dead letter back in the queue (an event's id, or a timeout's job id): it is
        delivered, or fired, again from attempt 1."""
        if not await redrive(service, id, admin_tenant()):
            raise NotFound("DeadLetter", id, f"no dead letter has the id {id}")
        await audited(service, request, "redrive", [id], {}, "redriven=1")

    return router
