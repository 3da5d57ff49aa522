# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""The flow of one correlation (tag "admin"): every event, reaction, timeout and call of one
business transaction that this deployable recorded, in time order.

GET /api/admin/flow/{correlation_id}?peers=false -> {correlation_id, deployable, entries, peers}

From what the runtime keeps anyway (no write of its own):
- `event`: an outbox row of the correlation (pending, delivered under `retention: log`, dead or
  archived; a row a `retention: work` channel delivered is deleted, and shows through the
  reactions that applied it), at the time the event occurred;
- `reaction`: an inbox row: a reaction of this deployable applied the event (its consumer name,
  `<Context>.<Workflow>.on(<Event>)`), at the time it ran (`processed_at`);
- `timeout`: a process's timeout armed or dead (`__loom_timers`, at its due time) or fired (an
  inbox row the firing transaction wrote, `processes/fired.py`);
- `call`: a call this service made of another context's handler (`http/call_log.py`: the last
  thousand, in memory).

`peers=true` asks the other deployables the same route too (`flow_peers.py`) and merges their
entries; `peers` then says which answered. A tenant's administrator sees its tenant's entries only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from fastapi import APIRouter, Depends, Query, Request
from sqlalchemy import ColumnElement, select
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.api_calls import Apis
from loom.runtime.http.flow_model import FlowEntryOut, FlowOut, Kind, deployable, in_order
from loom.runtime.http.flow_peers import peer_timeout, with_peers
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.outbox import TIMEOUT, inbox, outbox
from loom.runtime.storage.work import Units


class FlowHost(Units, Protocol):
    """What the flow needs of the service: its channels (an outbox and an inbox with any),
    whether it has process tables, and its API calls."""

    @property
    def channels(self) -> Sequence[Channel]: ...

    @property
    def uses_processes(self) -> bool: ...

    @property
    def apis(self) -> Apis: ...


def _context(name: str | None) -> str | None:
    """The context a qualified name starts with (`Orders.OrderPlaced`, `Orders.placeOrder…`)."""
    return name.split(".", 1)[0] if name and "." in name else None


def _error(row: Any) -> str:
    return f": {row.last_error}" if row.last_error else ""


def _entry(kind: Kind, at: datetime, name: str, status: str, **more: Any) -> FlowEntryOut:
    event_id = more.pop("event_id", None)
    return FlowEntryOut(
        at=at,
        kind=kind,
        deployable=deployable(),
        context=more.pop("context", _context(name)),
        name=name,
        status=status,
        event_id=str(event_id) if event_id is not None else None,
        causation_id=more.pop("causation_id", None),
        detail=more.pop("detail", None),
        tenant=more.pop("tenant", None) or None,
    )


async def _events(
    conn: AsyncConnection, correlation: str, tenant: str | None
) -> list[FlowEntryOut]:
    o = outbox.c
    where: list[ColumnElement[bool]] = [o.correlation_id == correlation]
    if tenant is not None:
        where.append(o.tenant == tenant)
    stmt = select(
        o.event_id, o.event_type, o.channel, o.causation_id, o.occurred_at, o.status
    ).add_columns(o.last_error, o.tenant)
    return [
        _entry(
            "event",
            r.occurred_at,
            r.event_type,
            r.status,
            event_id=r.event_id,
            causation_id=r.causation_id,
            detail=f"channel {r.channel}{_error(r)}",
            tenant=r.tenant,
        )
        for r in (await conn.execute(stmt.where(*where))).all()
    ]


async def _applied(
    conn: AsyncConnection, correlation: str, tenant: str | None
) -> list[FlowEntryOut]:
    i = inbox.c
    where: list[ColumnElement[bool]] = [i.correlation_id == correlation]
    if tenant is not None:
        where.append(i.tenant == tenant)
    stmt = select(i.consumer, i.event_id, i.processed_at, i.kind, i.event_type, i.causation_id)
    out = []
    for r in (await conn.execute(stmt.add_columns(i.tenant).where(*where))).all():
        if r.kind == TIMEOUT:
            out.append(_entry("timeout", r.processed_at, r.consumer, "fired", event_id=r.event_id))
            continue
        out.append(
            _entry(
                "reaction",
                r.processed_at,
                r.consumer,
                "applied",
                event_id=r.event_id,
                causation_id=r.causation_id,
                detail=f"applied {r.event_type}" if r.event_type else None,
                tenant=r.tenant,
            )
        )
    return out


async def _timeouts(
    conn: AsyncConnection, correlation: str, tenant: str | None
) -> list[FlowEntryOut]:
    from loom.runtime.processes.tables import timers
    from loom.runtime.processes.timers import of_tenant

    t = timers.c
    stmt = select(t.job_id, t.process, t.name, t.key, t.due_at, t.status, t.last_error)
    stmt = stmt.add_columns(t.tenant).where(t.correlation_id == correlation, *of_tenant(tenant))
    return [
        _entry(
            "timeout",
            r.due_at,
            f"{r.process}.{r.name}",
            r.status,
            event_id=r.job_id,
            detail=f"key {r.key}{_error(r)}",
            tenant=r.tenant,
        )
        for r in (await conn.execute(stmt)).all()
    ]


async def local_flow(service: FlowHost, correlation: str, tenant: str | None) -> FlowOut:
    """This deployable's entries of `correlation` (of `tenant`), in time order."""
    entries: list[FlowEntryOut] = []
    async with service.engine.connect() as conn:
        if service.channels:  # an outbox and an inbox
            entries += await _events(conn, correlation, tenant)
            entries += await _applied(conn, correlation, tenant)
        if service.uses_processes:
            entries += await _timeouts(conn, correlation, tenant)
    entries += [
        _entry(
            "call",
            c.at,
            c.request,
            c.outcome,
            context=c.caller,
            detail=f"to context {c.callee} ({c.ms:g} ms)",
            tenant=c.tenant,
        )
        for c in service.apis.calls.of(correlation, tenant)
    ]
    return FlowOut(
        correlation_id=correlation, deployable=deployable(), entries=in_order(entries), peers=[]
    )


def flow_router(route_class: Any, get_service: Callable[..., FlowHost]) -> APIRouter:
    """The flow route; `get_service` is the app's service dependency. A bad
    LOOM_FLOW_PEER_TIMEOUT stops the build (ValueError)."""
    peer_timeout()
    router = admin_routes(route_class)

    @router.get(
        "/api/admin/flow/{correlation_id}",
        response_model=FlowOut,
        responses=problems(401, 403, 422, 500, 503),
        operation_id="admin_getFlow",
    )
    async def get_flow(
        request: Request,
        correlation_id: str,
        peers: bool = Query(False, description="ask the other deployables too, and merge"),
        service: FlowHost = Depends(get_service),
    ) -> FlowOut:
        """Every event, reaction, timeout and call of one correlation, in time order."""
        found = await local_flow(service, correlation_id, admin_tenant())
        if not peers:
            return found
        return await with_peers(found, request.headers.get("authorization"))

    return router
