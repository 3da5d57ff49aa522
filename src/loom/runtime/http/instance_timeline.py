"""The timeline of one process instance: the steps the service ran for it, in the order they ran,
from the inbox rows its durable reactions and fired timeouts wrote (`messaging/outbox.py`: each
holds the key of the instance its step loaded, `values/step_subject.py`). An in-process
reaction writes no inbox row, and a service without channels keeps no inbox: their steps are not
listed (docs/processes.md#instances-for-operators)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.messaging.outbox import TIMEOUT, inbox


class StepOut(BaseModel):
    at: datetime  # when it ran
    kind: Literal["reaction", "timeout"]
    # `Orders.PaymentDeadline.on(Payment.PaymentSucceeded)`, `Orders.PaymentDeadline.timeout(payment)`
    step: str
    event_type: str | None  # the event it applied (none for a timeout)
    event_id: str  # the event's id; a timeout's job id
    correlation_id: str | None


async def steps_of(
    conn: AsyncConnection, process: str, key: str, tenant: str | None
) -> list[StepOut]:
    """The steps of `process`'s instance `key` (in `tenant`, when the instance has one)."""
    i = inbox.c
    stmt = (
        select(i.processed_at, i.kind, i.consumer, i.event_type, i.event_id, i.correlation_id)
        .where(i.subject == key, i.consumer.startswith(f"{process}.", autoescape=True))
        .order_by(i.processed_at, i.event_id)
    )
    if tenant is not None:
        stmt = stmt.where(i.tenant == tenant)
    return [
        StepOut(
            at=row.processed_at,
            kind="timeout" if row.kind == TIMEOUT else "reaction",
            step=row.consumer,
            event_type=row.event_type,
            event_id=str(row.event_id),
            correlation_id=row.correlation_id,
        )
        for row in await conn.execute(stmt)
    ]
