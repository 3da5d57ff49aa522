# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""Operators' view of the outbox (tag "admin"):

GET  /api/admin/outbox               -> [{channel, pending, oldest_pending_at, lag_seconds, ...}]
POST /api/admin/outbox/publish-now   -> {made_due, pending}

Per durable channel: its pending rows (waiting, claimed, or waiting for a retry), the age of the
oldest (the lag: how far behind the relay is), its dead letters, and the last relay error: the
error of the pending row whose failed delivery was retried last (the outbox row keeps each
failure's error in `last_error` until it is delivered or dead-lettered; a dead letter's error is
on `/api/admin/dead-letters/groups`).

Publish-now makes every pending row waiting for a retry due now (its backoff cut short; a row a
relay holds is left to it), and wakes the relays: this one at once, the others by NOTIFY on
PostgreSQL, by their poll otherwise. A tenant's administrator sees and publishes its tenant's rows
only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel
from sqlalchemy import ColumnElement, and_, func, or_, select, update

from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.audit import audited, write_audit
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.outbox import DEAD, PENDING, notify, outbox
from loom.runtime.messaging.relay import Relay
from loom.runtime.storage.work import Units
from loom.runtime.values import clock

o = outbox.c


class OutboxAdminHost(Units, Protocol):
    """What the outbox routes need of the service: its channels and its relay."""

    @property
    def channels(self) -> Sequence[Channel]: ...

    @property
    def relay(self) -> Relay: ...


class ChannelOutboxOut(BaseModel):
    channel: str
    pending: int
    oldest_pending_at: datetime | None  # when the oldest pending event occurred; null: none
    lag_seconds: float  # its age now; 0 with nothing pending
    retrying: int  # pending rows that failed at least once
    dead: int
    last_error: str | None


class PublishedOut(BaseModel):
    made_due: int  # pending rows whose retry was brought forward to now
    pending: int  # rows pending now, every one due for the relay


def _of(tenant: str | None) -> tuple[ColumnElement[bool], ...]:
    return () if tenant is None else (o.tenant == tenant,)


async def outbox_view(service: OutboxAdminHost, tenant: str | None) -> list[ChannelOutboxOut]:
    """Each durable channel's pending rows, lag, dead letters and last error (of `tenant`)."""
    if not service.channels:  # no outbox table: nothing is ever pending
        return []
    counts = (
        select(
            o.channel,
            o.status,
            func.count(),
            func.min(o.occurred_at),
            func.count(o.last_error),
        )
        .where(o.status.in_((PENDING, DEAD)), *_of(tenant))
        .group_by(o.channel, o.status)
    )
    last_error = (
        select(o.last_error)
        .where(o.status == PENDING, o.last_error.is_not(None), *_of(tenant))
        .order_by(o.available_at.desc(), o.event_id.desc())
        .limit(1)
    )
    found: dict[tuple[str, str], tuple[int, datetime | None, int]] = {}
    errors: dict[str, str | None] = {}
    async with service.engine.connect() as conn:
        for channel, status, n, oldest, failed in (await conn.execute(counts)).all():
            found[(channel, status)] = (int(n), oldest, int(failed))
        for channel in service.channels:
            if found.get((channel.name, PENDING), (0, None, 0))[2]:
                query = last_error.where(o.channel == channel.name)
                errors[channel.name] = (await conn.execute(query)).scalar()
    now = clock.now()
    out = []
    for channel in service.channels:
        pending, oldest, retrying = found.get((channel.name, PENDING), (0, None, 0))
        out.append(
            ChannelOutboxOut(
                channel=channel.name,
                pending=pending,
                oldest_pending_at=oldest,
                lag_seconds=max(0.0, (now - oldest).total_seconds()) if oldest else 0.0,
                retrying=retrying,
                dead=found.get((channel.name, DEAD), (0, None, 0))[0],
                last_error=errors.get(channel.name),
            )
        )
    return out


async def publish_now(
    service: OutboxAdminHost, request: Request, tenant: str | None
) -> PublishedOut:
    """Make the pending rows waiting for a retry due now (of `tenant`), and wake the relays."""
    if not service.channels:  # no outbox table: nothing to publish
        await audited(service, request, "publish-now", [], {}, "made_due=0")
        return PublishedOut(made_due=0, pending=0)
    now = clock.now()
    unleased = or_(o.claimed_until.is_(None), o.claimed_until <= now)
    waiting = and_(o.status == PENDING, o.available_at > now, unleased, *_of(tenant))
    async with service.transaction() as work:
        conn = await work.connection()
        made = (await conn.execute(update(outbox).where(waiting).values(available_at=now))).rowcount
        pending_q = select(func.count()).where(o.status == PENDING, *_of(tenant))
        pending = int((await conn.execute(pending_q)).scalar() or 0)
        await write_audit(conn, request, "publish-now", [], {}, f"made_due={made}")
        if pending:
            await notify(conn, service.dialect)
    service.relay.wake()
    return PublishedOut(made_due=int(made), pending=pending)


def outbox_router(route_class: Any, get_service: Callable[..., OutboxAdminHost]) -> APIRouter:
    """The outbox routes; `get_service` is the app's service dependency."""
    router = admin_routes(route_class)

    @router.get(
        "/api/admin/outbox",
        response_model=list[ChannelOutboxOut],
        responses=problems(401, 403, 500, 503),
        operation_id="admin_getOutbox",
    )
    async def get_outbox(
        service: OutboxAdminHost = Depends(get_service),
    ) -> list[ChannelOutboxOut]:
        """Each durable channel's pending rows, lag, dead letters and last relay error."""
        return await outbox_view(service, admin_tenant())

    @router.post(
        "/api/admin/outbox/publish-now",
        response_model=PublishedOut,
        responses=problems(401, 403, 413, 422, 500, 503),
        operation_id="admin_publishOutboxNow",
    )
    async def publish(
        request: Request, service: OutboxAdminHost = Depends(get_service)
    ) -> PublishedOut:
        """Bring every pending retry forward to now and wake the relay."""
        return await publish_now(service, request, admin_tenant())

    return router
