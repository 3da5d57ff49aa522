# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""Dead letters in bulk (tag "admin"), beside the per-letter routes of `admin.py`:

GET  /api/admin/dead-letters/groups?archived   -> [{group, count, oldest, newest, sample_id}]
POST /api/admin/dead-letters/redrive            {ids | group, rate_per_second} -> what it did
POST /api/admin/dead-letters/{id}/archive       -> 204: set aside, listed with ?archived=true only

A group is the dead letters that failed the same way: (kind, channel, event type, consumer, error
fingerprint). For a dead event the consumer is the reactor or process named first in its error
(`<consumer>: <Error>: <message>`), for a dead timeout its process; the fingerprint is the error's
first line without the consumer, every id and number in it replaced by `#`, so the letters of
one bug share one group whatever their ids.

A redrive at a rate runs in the request, paced: batches of `rate_per_second` letters (at least
one), one batch per second, for at most `MAX_REDRIVE_SECONDS`; the answer says how many it
redrove and how many of the selection are left (call again for them). Chosen over a background
job: nothing to lose when the replica stops mid-way (what was redriven is redriven, the rest is
still dead), no state to share between replicas, and the caller sees the result. A tenant's
administrator groups, redrives and archives its tenant's letters only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import select, update

from loom.runtime.http.admin import AdminHost, of_tenant
from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.audit import audited, write_audit
from loom.runtime.messaging.outbox import DEAD, outbox
from loom.runtime.storage.lease import ARCHIVED
from loom.runtime.values.errors import InvalidValue, NotFound

MAX_REDRIVE_SECONDS = 30  # a paced redrive answers within this; the rest waits for the next call
MAX_IDS = 1000  # ids one request may name
_FIRST_CONSUMER = re.compile(r"^([^:;]+): (.*)$")
_IDS = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|\b0x[0-9a-fA-F]+\b|\d+(?:\.\d+)?"
)

Kind = Literal["event", "timeout"]
o = outbox.c


DeadLetterHost = AdminHost


class GroupKey(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Kind
    channel: str | None = None  # a dead event's; null for a timeout
    event_type: str  # a dead event's type, or a dead timeout's name
    consumer: str | None = None  # the reactor / process named in the error; a timeout's process
    fingerprint: str


class GroupOut(BaseModel):
    group: GroupKey
    group_id: str  # a short stable hash of `group`
    count: int
    oldest: datetime  # the earliest event occurred / timeout due
    newest: datetime
    sample_id: UUID
    sample_error: str | None
    tenant: str | None = None  # set when every letter of the group is of one tenant


class RedriveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: list[UUID] | None = Field(None, max_length=MAX_IDS)
    group: GroupKey | None = None
    rate_per_second: float = Field(100.0, gt=0, le=10_000)

    @model_validator(mode="after")
    def _one_selection(self) -> RedriveIn:
        if (self.ids is None) == (self.group is None):
            raise ValueError("give either `ids` (dead letter ids) or `group` (a group's key)")
        return self


class RedriveOut(BaseModel):
    selected: int  # dead letters the selection named (this call's share)
    redriven: int  # put back in the queue by this call
    missing: int  # named, but not a dead letter (any more), or another tenant's
    remaining: int  # of the selection, left for another call by the pace limit
    batches: int
    rate_per_second: float


def split_error(error: str | None, kind: Kind, process: str | None) -> tuple[str | None, str]:
    """(consumer, fingerprint) of a dead letter's `last_error`."""
    line = (error or "").strip().splitlines()[0] if (error or "").strip() else ""
    consumer = process
    if kind == "event":
        first = _FIRST_CONSUMER.match(line)
        if first is not None:
            consumer, line = first.group(1).strip(), first.group(2)
        line = line.split("; ", 1)[0]
    return consumer, _IDS.sub("#", line)[:300]


def group_id(key: GroupKey) -> str:
    text = json.dumps(key.model_dump(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Letter:
    __slots__ = ("at", "error", "id", "key", "tenant")

    def __init__(self, id: UUID, key: GroupKey, at: datetime, error: str | None, tenant: Any):
        self.id, self.key, self.at, self.error, self.tenant = id, key, at, error, tenant


async def _letters(service: DeadLetterHost, status: str, tenant: str | None) -> list[_Letter]:
    """Every dead (or archived) letter of `tenant`, with its group key."""
    out: list[_Letter] = []
    async with service.engine.connect() as conn:
        if service.channels:
            events = select(
                o.event_id, o.channel, o.event_type, o.last_error, o.occurred_at, o.tenant
            ).where(o.status == status, *of_tenant(o.tenant, tenant))
            for r in (await conn.execute(events)).all():
                consumer, fingerprint = split_error(r.last_error, "event", None)
                key = GroupKey(
                    kind="event",
                    channel=r.channel,
                    event_type=r.event_type,
                    consumer=consumer,
                    fingerprint=fingerprint,
                )
                out.append(_Letter(r.event_id, key, r.occurred_at, r.last_error, r.tenant))
        if service.uses_processes:
            from loom.runtime.processes.tables import timers
            from loom.runtime.processes.timers import tenant_of_row

            t = timers.c
            dead = select(t.job_id, t.process, t.name, t.last_error, t.due_at, t.tenant).where(
                t.status == status, *of_tenant(t.tenant, tenant)
            )
            for r in (await conn.execute(dead)).all():
                consumer, fingerprint = split_error(r.last_error, "timeout", r.process)
                key = GroupKey(
                    kind="timeout", event_type=r.name, consumer=consumer, fingerprint=fingerprint
                )
                out.append(_Letter(r.job_id, key, r.due_at, r.last_error, tenant_of_row(r.tenant)))
    return out


async def groups(service: DeadLetterHost, archived: bool, tenant: str | None) -> list[GroupOut]:
    """The dead (or archived) letters of `tenant`, grouped; the largest group first."""
    by_key: dict[str, list[_Letter]] = {}
    for letter in await _letters(service, ARCHIVED if archived else DEAD, tenant):
        by_key.setdefault(group_id(letter.key), []).append(letter)
    out = []
    for gid, letters in by_key.items():
        letters.sort(key=lambda x: (x.at, str(x.id)))
        tenants = {x.tenant for x in letters}
        out.append(
            GroupOut(
                group=letters[0].key,
                group_id=gid,
                count=len(letters),
                oldest=letters[0].at,
                newest=letters[-1].at,
                sample_id=letters[0].id,
                sample_error=letters[0].error,
                tenant=tenants.pop() if len(tenants) == 1 else None,
            )
        )
    out.sort(key=lambda g: (-g.count, g.oldest, g.group_id))
    return out


async def keys_of(
    service: DeadLetterHost, ids: list[UUID], tenant: str | None
) -> dict[UUID, GroupKey]:
    """The group keys of the dead letters among `ids` (of `tenant`): what a redrive of them
    would set off (another's, or no dead letter, is left out)."""
    wanted = set(ids)
    return {x.id: x.key for x in await _letters(service, DEAD, tenant) if x.id in wanted}


async def paced_redrive(
    service: DeadLetterHost, request: Request, body: RedriveIn, tenant: str | None
) -> RedriveOut:
    """Redrive the selection in paced batches (module docstring)."""
    if body.group is not None:
        wanted = group_id(body.group)
        letters = [x for x in await _letters(service, DEAD, tenant) if group_id(x.key) == wanted]
        letters.sort(key=lambda x: (x.at, str(x.id)))
        ids: list[UUID] = [x.id for x in letters]
    else:
        ids = list(dict.fromkeys(body.ids or ()))
    rate = body.rate_per_second
    batch = max(1, math.floor(rate))
    allowed = max(batch, math.floor(rate * MAX_REDRIVE_SECONDS))
    now_ids, later = ids[:allowed], ids[allowed:]
    redriven = batches = 0
    started = time.monotonic()
    for start in range(0, len(now_ids), batch):
        if batches:  # pace: batch n starts n * batch / rate seconds after the first
            await asyncio.sleep(max(0.0, started + batches * batch / rate - time.monotonic()))
        chunk = now_ids[start : start + batch]
        n = await service.outbox.redrive_many(chunk, tenant) if service.channels else 0
        if service.uses_processes and n < len(chunk):
            n += await service.timers.redrive_many(chunk, tenant)
        redriven += n
        batches += 1
    params: dict[str, Any] = {"rate_per_second": rate}
    if body.group is not None:
        params["group"] = body.group.model_dump()
    outcome = f"redriven={redriven} remaining={len(later)}"
    await audited(service, request, "redrive", now_ids, params, outcome)
    return RedriveOut(
        selected=len(now_ids),
        redriven=redriven,
        missing=len(now_ids) - redriven,
        remaining=len(later),
        batches=batches,
        rate_per_second=rate,
    )


async def archive(service: DeadLetterHost, request: Request, id: UUID, tenant: str | None) -> None:
    """Set the dead letter `id` aside (of `tenant`); a 404 when there is none."""
    async with service.transaction() as work:
        conn = await work.connection()
        found: tuple[str, Any] | None = None
        if service.channels:
            stmt = (
                update(outbox)
                .where(o.event_id == id, o.status == DEAD, *of_tenant(o.tenant, tenant))
                .values(status=ARCHIVED)
                .returning(o.tenant)
            )
            row = (await conn.execute(stmt)).first()
            found = ("event", row.tenant) if row is not None else None
        if found is None and service.uses_processes:
            from loom.runtime.processes.tables import timers
            from loom.runtime.processes.timers import tenant_of_row

            t = timers.c
            stmt = (
                update(timers)
                .where(t.job_id == id, t.status == DEAD, *of_tenant(t.tenant, tenant))
                .values(status=ARCHIVED)
                .returning(t.tenant)
            )
            row = (await conn.execute(stmt)).first()
            found = ("timeout", tenant_of_row(row.tenant)) if row is not None else None
        if found is None:
            raise NotFound("DeadLetter", id, f"no dead letter has the id {id}")
        await write_audit(conn, request, "archive", [id], {}, found[0], found[1])


def _uuid(id: str) -> UUID:
    try:
        return UUID(id)
    except ValueError:
        raise InvalidValue(f"{id!r} is not a dead letter id (a UUID)", path="path.id") from None


def dead_letter_router(route_class: Any, get_service: Callable[..., DeadLetterHost]) -> APIRouter:
    """The grouped, batch and archive dead-letter routes."""
    router = admin_routes(route_class)

    @router.get(
        "/api/admin/dead-letters/groups",
        response_model=list[GroupOut],
        responses=problems(401, 403, 422, 500, 503),
        operation_id="admin_groupDeadLetters",
    )
    async def group_dead_letters(
        archived: bool = Query(False), service: DeadLetterHost = Depends(get_service)
    ) -> list[GroupOut]:
        """The dead letters grouped by how they failed, the largest group first (`archived`:
        the archived ones)."""
        return await groups(service, archived, admin_tenant())

    @router.post(
        "/api/admin/dead-letters/redrive",
        response_model=RedriveOut,
        responses=problems(401, 403, 413, 422, 500, 503),
        operation_id="admin_redriveDeadLetters",
    )
    async def redrive_dead_letters(
        body: RedriveIn, request: Request, service: DeadLetterHost = Depends(get_service)
    ) -> RedriveOut:
        """Redrive dead letters by id or a whole group, `rate_per_second` at most."""
        return await paced_redrive(service, request, body, admin_tenant())

    @router.post(
        "/api/admin/dead-letters/{id}/archive",
        status_code=204,
        response_class=Response,
        responses=problems(401, 403, 404, 413, 422, 500, 503),
        operation_id="admin_archiveDeadLetter",
    )
    async def archive_dead_letter(
        id: str, request: Request, service: DeadLetterHost = Depends(get_service)
    ) -> None:
        """Set a dead letter aside: no longer listed (but with `?archived=true`) nor redriven."""
        await archive(service, request, _uuid(id), admin_tenant())

    return router
