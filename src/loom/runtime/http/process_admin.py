# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""Operators' view of process instances (tag "admin"):

GET /api/admin/processes                             -> [{process, running, completed, ...}]
GET /api/admin/processes/{process}/instances         -> {items, limit, offset, total}
    ?state=running|completed&key=&tenant=&started_before=&limit&offset
GET /api/admin/processes/{process}/instances/{key}   -> one instance and its timeouts, or a 404

A process is named as its timers and metrics name it (`Orders.PaymentDeadline`). The instances
are those of a generated process workflow (its instance table: the correlation key, the declared
fields, the episode) and of a process manager kept by the runtime's store (`__loom_processes`:
its JSON state). Without the key, no route of the model lists them: these are the operator's.

Like the other admin routes, they are across tenants: an instance of a tenanted context shows its
`tenant`, and `tenant=` keeps one tenant's. An admin whose token names a tenant sees that tenant's
instances only (`tenant=` cannot widen it) and another tenant's key is a 404.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol
from uuid import UUID

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel
from sqlalchemy import ColumnElement, RowMapping, Table, false, func, select

from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.instance_timeline import StepOut, steps_of
from loom.runtime.processes.episodes import COMPLETED, RUNNING
from loom.runtime.processes.runner import ProcessRunner
from loom.runtime.processes.tables import ARMED, processes, timers
from loom.runtime.processes.timers import tenant_of_row
from loom.runtime.storage.lease import ARCHIVED
from loom.runtime.storage.mapping import steps_column, tenant_column, trace_column
from loom.runtime.storage.work import Units
from loom.runtime.values import clock
from loom.runtime.values.errors import InvalidValue, NotFound, StartupRefused
from loom.runtime.values.schemas import Page, PageLimit, PageOffset

State = Literal["running", "completed"]
# a generated instance's bookkeeping columns, answered beside its fields rather than among them
_EPISODE_COLUMNS = ("ended", "episode", "started_at", "ended_at")


class ProcessAdminHost(Units, Protocol):
    """What the routes need of the service: its process runner (the tracked instance tables)."""

    @property
    def processes(self) -> ProcessRunner: ...


class ProcessOut(BaseModel):
    process: str
    running: int
    completed: int
    timeouts_armed: int
    timeouts_dead: int  # dead letters (`/api/admin/dead-letters`), until redriven


class TimeoutOut(BaseModel):
    job_id: UUID
    name: str
    due_at: datetime
    # armed: waiting for its time; due: its time came, no scheduler took it yet; leased: a
    # scheduler is running its handler; dead: every attempt failed (a dead letter)
    status: Literal["armed", "due", "leased", "dead"]
    attempts: int
    last_error: str | None
    correlation_id: str | None


class InstanceOut(BaseModel):
    process: str
    key: str
    tenant: str | None = None  # a tenanted context's instance's; null: untenanted
    state: State
    episode: int | None = None  # a process workflow's, counting from 1; null: a store's
    started_at: datetime | None = None
    ended_at: datetime | None = None
    version: int
    fields: dict[str, Any]


class MachineOut(BaseModel):
    """The process's state machine as the `states` diagram draws it (the generated package's
    `console.json`), `current` the id of the node of the instance's state."""

    nodes: list[dict[str, str]]
    edges: list[dict[str, str]]
    current: str


class InstanceDetailOut(InstanceOut):
    timeouts: list[TimeoutOut]
    # its timeline: the reactions, timeouts and commands that moved it, in order (a generated
    # process's journal; a store's process manager keeps none)
    steps: list[StepOut]
    machine: MachineOut | None = None  # null: a process the model does not declare


class _Source:
    """Where one process's instances are: a generated instance table, or the runtime's store."""

    def __init__(self, process: str, table: Table | None) -> None:
        self.process = process
        self.table = table
        if table is None:
            c = processes.c
            self.key, self.tenant = c.key, None
            self.scope: tuple[ColumnElement[bool], ...] = (c.process == process,)
            self.ended: ColumnElement[bool] | None = c.ended
            self.started: ColumnElement[datetime] | None = None
            return
        self.tenant = tenant_column(table)
        keys = [col for col in table.primary_key.columns if col is not self.tenant]
        self.key = keys[0]
        self.scope = ()
        self.ended = table.c.get("ended")
        self.started = table.c.get("started_at")

    @property
    def from_(self) -> Table:
        return processes if self.table is None else self.table

    def conditions(
        self, state: State | None, key: str | None, tenant: str | None, before: datetime | None
    ) -> list[ColumnElement[bool]]:
        where: list[ColumnElement[bool]] = list(self.scope)
        if state is not None:
            if self.ended is None:  # a workflow that never ends: every instance runs
                if state == COMPLETED:
                    where.append(false())
            else:
                where.append(self.ended.is_(state == COMPLETED))
        if key is not None:
            value = _typed(self.key, key)
            where.append(self.key == value if value is not None else false())
        if tenant is not None:
            if self.tenant is None:
                where.append(false())  # an untenanted process has no tenant's rows
            else:
                where.append(self.tenant == tenant)
        if before is not None:
            if self.started is None:
                raise InvalidValue(
                    f"{self.process} keeps no start time: started_before does not apply",
                    path="query.started_before",
                )
            where.append(self.started < before)
        return where

    def journal(self, row: RowMapping) -> str | None:
        """The instance's journal (`storage/journal.py`): a generated process's only."""
        column = None if self.table is None else steps_column(self.table)
        return None if column is None else row[column.key]

    def answer(self, row: RowMapping) -> InstanceOut:
        if self.table is None:
            return InstanceOut(
                process=self.process,
                key=row["key"],
                state=COMPLETED if row["ended"] else RUNNING,
                version=row["version"],
                fields=json.loads(row["state"]) if row["state"] else {},
            )
        fields: dict[str, Any] = {}
        table = self.table
        skip = {self.tenant, trace_column(table), steps_column(table), table.c.get("version")}
        for column in self.table.columns:
            if column in skip or column.key in _EPISODE_COLUMNS:
                continue
            name = column.info.get("loom", {}).get("field", column.key)
            fields[name] = row[column.key]
        tenant = row[self.tenant.key] if self.tenant is not None else None
        return InstanceOut(
            process=self.process,
            key=str(row[self.key.key]),
            tenant=tenant_of_row(tenant) if tenant is not None else None,
            state=COMPLETED if row.get("ended") else RUNNING,
            episode=row.get("episode"),
            started_at=row.get("started_at"),
            ended_at=row.get("ended_at"),
            version=row["version"],
            fields=fields,
        )


def _typed(column: ColumnElement[Any], key: str) -> Any:
    """`key`, a correlation key as a URL gives it, as the key column holds it (a UUID, a number);
    None when it cannot be one, so no instance has it."""
    try:
        kind = column.type.python_type
    except NotImplementedError:
        return key
    if kind is str:
        return key
    try:
        return UUID(key) if kind is UUID else kind(key)
    except (TypeError, ValueError):
        return None


def _sources(service: ProcessAdminHost) -> dict[str, _Source]:
    tracked = service.processes.tracked()
    return {name: _Source(name, table) for name, table in sorted(tracked.items())}


async def _source(service: ProcessAdminHost, process: str) -> _Source:
    """The source of `process`: a tracked workflow's table, else the store if it keeps any
    instance of that name (a process manager's), else a 404."""
    found = _sources(service).get(process)
    if found is not None:
        return found
    async with service.engine.connect() as conn:
        known = select(processes.c.process).where(processes.c.process == process).limit(1)
        if (await conn.execute(known)).first() is not None:
            return _Source(process, None)
    raise NotFound("Process", process, f"no process is named {process}")


async def process_list(service: ProcessAdminHost, tenant: str | None) -> list[ProcessOut]:
    """Every process with its instances by state and its timeouts by status (of `tenant`)."""
    counts: dict[str, dict[str, int]] = {}
    t = timers.c
    async with service.engine.connect() as conn:
        for name, source in _sources(service).items():
            ended = source.ended if source.ended is not None else false()
            rows = await conn.execute(
                select(ended, func.count())
                .select_from(source.from_)
                .where(*source.conditions(None, None, tenant, None))
                .group_by(ended)
            )
            counts[name] = {COMPLETED if done else RUNNING: n for done, n in rows.all()}
        kept = select(processes.c.process, processes.c.ended, func.count()).group_by(
            processes.c.process, processes.c.ended
        )
        if tenant is None:  # the store's process managers keep no tenant
            for name, done, n in (await conn.execute(kept)).all():
                counts.setdefault(name, {})[COMPLETED if done else RUNNING] = n
        by_status = select(t.process, t.status, func.count()).group_by(t.process, t.status)
        if tenant is not None:
            by_status = by_status.where(t.tenant == tenant)
        for name, status, n in (await conn.execute(by_status)).all():
            counts.setdefault(name, {})[status] = n
    return [
        ProcessOut(
            process=name,
            running=c.get(RUNNING, 0),
            completed=c.get(COMPLETED, 0),
            timeouts_armed=c.get(ARMED, 0),
            timeouts_dead=c.get("dead", 0),
        )
        for name, c in sorted(counts.items())
    ]


async def instance_page(
    service: ProcessAdminHost,
    process: str,
    filters: tuple[State | None, str | None, str | None, datetime | None],
    limit: int,
    offset: int,
) -> tuple[list[InstanceOut], int]:
    source = await _source(service, process)
    where = source.conditions(*filters)
    total_q = select(func.count()).select_from(source.from_).where(*where)
    page_q = select(source.from_).where(*where).order_by(source.key).limit(limit).offset(offset)
    async with service.engine.connect() as conn:
        total = int((await conn.execute(total_q)).scalar() or 0)
        rows = (await conn.execute(page_q)).mappings().all()
    return [source.answer(r) for r in rows], total


async def instance_detail(
    service: ProcessAdminHost, process: str, key: str, tenant: str | None
) -> InstanceDetailOut:
    source = await _source(service, process)
    t = timers.c
    async with service.engine.connect() as conn:
        where = source.conditions(None, key, tenant, None)
        rows = (await conn.execute(select(source.from_).where(*where))).mappings().all()
        if len(rows) != 1:  # none, or the same key in several tenants: name the tenant
            what = f"no instance of {process} has the key {key}"
            if rows:
                what = (
                    f"{len(rows)} tenants have an instance of {process} keyed {key}: give tenant="
                )
            raise NotFound("ProcessInstance", key, what)
        instance = source.answer(rows[0])
        journal = source.journal(rows[0])
        armed = select(timers).where(t.process == process, t.key == key, t.status != ARCHIVED)
        armed = armed.order_by(t.due_at)
        if instance.tenant is not None:
            armed = armed.where(t.tenant == instance.tenant)
        found = (await conn.execute(armed)).mappings().all()
    now = clock.now()
    timeouts = [_timeout(r, now) for r in found]
    steps = steps_of(journal)
    return InstanceDetailOut(**instance.model_dump(), timeouts=timeouts, steps=steps)


def _timeout(row: RowMapping, now: datetime) -> TimeoutOut:
    status: Literal["armed", "due", "leased", "dead"] = "dead"
    if row["status"] == ARMED:
        claimed = row["claimed_until"]
        if claimed is not None and claimed > now:
            status = "leased"
        else:
            status = "due" if row["available_at"] <= now else "armed"
    return TimeoutOut(
        job_id=row["job_id"],
        name=row["name"],
        due_at=row["due_at"],
        status=status,
        attempts=row["attempts"],
        last_error=row["last_error"],
        correlation_id=row["correlation_id"],
    )


def _confined(tenant: str | None) -> str | None:
    """The tenant a request reads: its admin's own when its token names one, else `tenant`."""
    own = admin_tenant()
    return own if own is not None else tenant


@functools.cache
def read_machines(views: Path | None) -> dict[str, Any]:
    """The processes' state machines of the generated package's `console.json`, by process; a
    file that cannot be read refuses the start (it is the package's own: a broken build)."""
    if views is None:
        return {}
    try:
        machines = json.loads(views.read_text(encoding="utf-8"))["processes"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StartupRefused(f"the service does not start: cannot read {views}: {exc}") from None
    if not isinstance(machines, dict):
        raise StartupRefused(f"the service does not start: {views} holds no processes")
    return machines


def machine_of(machines: Mapping[str, Any], instance: InstanceOut) -> MachineOut | None:
    """The instance's process's machine (`read_machines`), its state marked; None: none drawn."""
    drawn = machines.get(instance.process)
    if drawn is None:
        return None
    return MachineOut(
        nodes=drawn["nodes"], edges=drawn["edges"], current=f"{instance.process}.{instance.state}"
    )


def processes_router(
    route_class: Any,
    get_service: Callable[..., ProcessAdminHost],
    console_views: Path | None = None,
) -> APIRouter:
    """The process instance routes; `get_service` is the app's service dependency,
    `console_views` the generated package's `console.json` (`read_machines`)."""
    router = admin_routes(route_class)
    machines = read_machines(console_views)

    @router.get(
        "/api/admin/processes",
        response_model=list[ProcessOut],
        responses=problems(401, 403, 500, 503),
        operation_id="admin_listProcesses",
    )
    async def list_processes(
        service: ProcessAdminHost = Depends(get_service),
    ) -> list[ProcessOut]:
        """Every process, its instances running and completed, its timeouts armed and dead."""
        return await process_list(service, admin_tenant())

    @router.get(
        "/api/admin/processes/{process}/instances",
        response_model=Page[InstanceOut],
        responses=problems(401, 403, 404, 422, 500, 503),
        operation_id="admin_listProcessInstances",
    )
    async def list_instances(
        process: str,
        state: State | None = Query(None),
        key: str | None = Query(None),
        tenant: str | None = Query(None),
        started_before: datetime | None = Query(None),
        limit: PageLimit = 50,
        offset: PageOffset = 0,
        service: ProcessAdminHost = Depends(get_service),
    ) -> Page[InstanceOut]:
        """The instances of `process`, by key: `state`, `key`, `tenant` and `started_before`
        (an ISO 8601 time: instances older than it) keep some."""
        filters = (state, key, _confined(tenant), started_before)
        items, total = await instance_page(service, process, filters, limit, offset)
        return Page[InstanceOut](items=items, limit=limit, offset=offset, total=total)

    @router.get(
        "/api/admin/processes/{process}/instances/{key}",
        response_model=InstanceDetailOut,
        responses=problems(401, 403, 404, 422, 500, 503),
        operation_id="admin_getProcessInstance",
    )
    async def get_instance(
        process: str,
        key: str,
        tenant: str | None = Query(None),
        service: ProcessAdminHost = Depends(get_service),
    ) -> InstanceDetailOut:
        """One instance: its fields, its timeouts (armed, due, leased or dead) and its process's
        state machine with its state marked."""
        detail = await instance_detail(service, process, key, _confined(tenant))
        detail.machine = machine_of(machines, detail)
        return detail

    return router
