# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""The admin audit log (tag "admin"): every admin action leaves a row in `__loom_audit`.

GET /api/admin/audit?limit&offset&tenant    -> {items, limit, offset, total}, newest first

A row says who acted (the token's subject; without one, "loopback" for a request from this
machine, else "anonymous"), what (the action, its target ids, its parameters, and what came of
it), when, and in which tenant (a tenant's administrator, or the target's tenant). Actions that
change rows in one statement of their own (reschedule, cancel, archive) write their audit row in
the same transaction; the others (fire, redrive, publish-now) run through the scheduler's or the
outbox's own units of work, and write it right after, with what they did.

A tenant's administrator reads its tenant's rows only; the operator reads every row (`tenant=`
keeps one tenant's). An action the console runs (`acting`) is its signed-in user's, in its
tenant, and its parameters say `"via": "console"`, whichever admin function writes the row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel
from sqlalchemy import Column, MetaData, String, Table, Text, Uuid, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.storage.work import Units
from loom.runtime.values import clock
from loom.runtime.values.ids import new_id
from loom.runtime.values.principal import current_principal
from loom.runtime.values.schemas import Page, PageLimit, PageOffset
from loom.runtime.values.types import UtcDateTime

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost", "testclient"})

audit_metadata = MetaData()
audit = Table(
    "__loom_audit",
    audit_metadata,
    Column("audit_id", Uuid, primary_key=True),  # a UUIDv7: in time order
    Column("at", UtcDateTime, nullable=False),
    Column("actor", String, nullable=False),
    Column("action", String, nullable=False),
    Column("targets", Text, nullable=False),  # a JSON list of ids
    Column("parameters", Text, nullable=False),  # a JSON object
    Column("outcome", String, nullable=True),
    # the tenant acted in: the tenant administrator's, or the target's; NULL: the operator's
    Column("tenant", String, nullable=True),
)


class AuditOut(BaseModel):
    audit_id: str
    at: datetime
    actor: str
    action: str
    targets: list[str]
    parameters: dict[str, Any]
    outcome: str | None
    tenant: str | None = None


@dataclass(frozen=True)
class Acting:
    """Who acts when the request's principal does not say (the console's user, signed in with its
    cookie: None, the request's address says), in which tenant, and through what."""

    who: str | None
    tenant: str | None
    via: str


_acting: ContextVar[Acting | None] = ContextVar("loom_audit_acting", default=None)


@contextmanager
def acting(who: str | None, tenant: str | None, via: str) -> Iterator[None]:
    """The audit rows written in the block are `who`'s (in `tenant`), `"via": via`."""
    token = _acting.set(Acting(who, tenant, via))
    try:
        yield
    finally:
        _acting.reset(token)


def actor(request: Request | None) -> str:
    """Who is acting: the token's subject, else "loopback" (a request from this machine) or
    "anonymous" (no request: a command on the database, which names itself with `acting`)."""
    subject = current_principal().id
    if subject:
        return subject
    client = None if request is None else request.client
    host = client.host if client is not None else ""
    return "loopback" if host in LOOPBACK_HOSTS else "anonymous"


async def write_audit(
    conn: AsyncConnection,
    request: Request | None,
    action: str,
    targets: Sequence[object],
    parameters: Mapping[str, Any] | None = None,
    outcome: str | None = None,
    tenant: str | None = None,
    who: str | None = None,
) -> None:
    """Record an admin action on `conn` (in its transaction); `who` names the actor when the
    request's principal does not (the console's user, signed in with its cookie); in an
    `acting` block, its user, tenant and `via` fill in what the caller does not say."""
    by = _acting.get()
    if by is not None:
        who = who or by.who
        tenant = tenant if tenant is not None else by.tenant
        parameters = {**(parameters or {}), "via": by.via}
    row = {
        "audit_id": new_id(),
        "at": clock.now(),
        "actor": who or actor(request),
        "action": action,
        "targets": json.dumps([str(t) for t in targets]),
        "parameters": json.dumps(dict(parameters or {}), default=str, sort_keys=True),
        "outcome": outcome,
        "tenant": tenant if tenant is not None else admin_tenant(),
    }
    await conn.execute(insert(audit), row)


async def audited(
    units: Units,
    request: Request | None,
    action: str,
    targets: Sequence[object],
    parameters: Mapping[str, Any] | None = None,
    outcome: str | None = None,
    tenant: str | None = None,
    who: str | None = None,
) -> None:
    """Record an admin action that ran in units of work of its own, in a transaction of its own."""
    async with units.transaction() as work:
        conn = await work.connection()
        await write_audit(conn, request, action, targets, parameters, outcome, tenant, who)


async def audit_page(
    units: Units, limit: int, offset: int, tenant: str | None
) -> tuple[list[AuditOut], int]:
    """One page of the audit log, newest first, and the total (`tenant`: its rows)."""
    where = () if tenant is None else (audit.c.tenant == tenant,)
    total_q = select(func.count()).select_from(audit).where(*where)
    page_q = (
        select(audit).where(*where).order_by(audit.c.audit_id.desc()).limit(limit).offset(offset)
    )
    async with units.engine.connect() as conn:
        total = int((await conn.execute(total_q)).scalar() or 0)
        rows = (await conn.execute(page_q)).mappings().all()
    items = [
        AuditOut(
            audit_id=str(r["audit_id"]),
            at=r["at"],
            actor=r["actor"],
            action=r["action"],
            targets=json.loads(r["targets"]),
            parameters=json.loads(r["parameters"]),
            outcome=r["outcome"],
            tenant=r["tenant"],
        )
        for r in rows
    ]
    return items, total


def audit_router(route_class: Any, get_service: Callable[..., Units]) -> APIRouter:
    """The audit log route; `get_service` is the app's service dependency."""
    router = admin_routes(route_class)

    @router.get(
        "/api/admin/audit",
        response_model=Page[AuditOut],
        responses=problems(401, 403, 422, 500, 503),
        operation_id="admin_listAudit",
    )
    async def list_audit(
        limit: PageLimit = 50,
        offset: PageOffset = 0,
        tenant: str | None = Query(None),
        service: Units = Depends(get_service),
    ) -> Page[AuditOut]:
        """The admin actions, newest first: who, what, when, in which tenant."""
        own = admin_tenant()
        items, total = await audit_page(service, limit, offset, own if own is not None else tenant)
        return Page[AuditOut](items=items, limit=limit, offset=offset, total=total)

    return router
