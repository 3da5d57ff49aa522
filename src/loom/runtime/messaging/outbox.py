"""The transactional outbox and the inbox: their tables, the write done inside a unit of work, and
the dead-letter operations (list, redrive) behind the admin endpoint and `loom dead-letters`.

`__loom_outbox` holds one row per durable event, written on the connection and in the transaction
of the write that raised it, so the row exists if and only if that write committed. `__loom_inbox`
holds (consumer, event_id) for every durable delivery a consumer processed, written in the
consumer's own transaction, so a redelivery is recognised and skipped.

Every timestamp is `loom.runtime.clock.now()` passed as a parameter, never the database's clock:
tests move time with the clock helpers, and replicas with skewed database clocks agree.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple, Protocol
from uuid import UUID

from sqlalchemy import (
    Column,
    ColumnElement,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    Uuid,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.events import UNKNOWN_REVISION, EventEnvelope, new_envelope
from loom.runtime.storage.dialects import dialect_insert
from loom.runtime.storage.lease import MAX_ERROR, LeasedQueue
from loom.runtime.storage.work import Units
from loom.runtime.values import clock
from loom.runtime.values.codec import encode
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.logs import log_fact
from loom.runtime.values.trace_context import REDRIVEN
from loom.runtime.values.tracing import current_stored
from loom.runtime.values.types import UtcDateTime


class Wakes(Protocol):
    """The relay, woken when dead letters are put back in the queue."""

    def wake(self) -> None: ...


NOTIFY_CHANNEL = "loom_outbox"
PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"

runtime_metadata = MetaData()
outbox = Table(
    "__loom_outbox",
    runtime_metadata,
    Column("event_id", Uuid, primary_key=True),
    Column("channel", String, nullable=False),
    Column("event_type", String, nullable=False),
    Column("payload", Text, nullable=False),
    Column("correlation_id", String, nullable=False),
    Column("causation_id", String, nullable=True),
    Column("occurred_at", UtcDateTime, nullable=False),
    Column("available_at", UtcDateTime, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("status", String, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("claimed_by", String, nullable=True),
    Column("claimed_until", UtcDateTime, nullable=True),
    Column("delivered_at", UtcDateTime, nullable=True),
    # the revision of the model whose service wrote the row (loom.lang.lower.revision); NULL in
    # rows written before events carried one, and by a service built without one
    Column("model_revision", String, nullable=True),
    # the tenant of the principal that raised the event (a tenanted context's); NULL for an
    # untenanted one: its consumers run as the system principal of that tenant
    Column("tenant", String, nullable=True),
    # a row bound for a broker: its `Loom-Key-Counts` (`messaging/ordering.py`); NULL for every other row,
    # and in rows written before it (their messages are applied unordered across replicas)
    Column("key_counts", String, nullable=True),
    # the W3C trace context of the span that raised the event (`values/tracing.py`: `traceparent`,
    # a newline, `tracestate`); NULL when the service did not trace, and in rows from before it
    Column("trace_context", Text, nullable=True),
    # the relay's claim: pending rows, due first, in event order
    Index("ix___loom_outbox_due", "status", "available_at", "event_id"),
)
# the relay's queue: a claim returns what a delivery reads
outbox_queue = LeasedQueue(
    outbox,
    key="event_id",
    ready=PENDING,
    dead=DEAD,
    order=("event_id",),
    returning=(
        "event_id",
        "channel",
        "event_type",
        "payload",
        "correlation_id",
        "causation_id",
        "occurred_at",
        "attempts",
        "model_revision",
        "tenant",
        "key_counts",
        "trace_context",
    ),
)
inbox = Table(
    "__loom_inbox",
    runtime_metadata,
    Column("consumer", String, nullable=False),
    Column("event_id", Uuid, nullable=False),
    Column("processed_at", UtcDateTime, nullable=False),
    # the tenant the delivery ran in (NULL: an untenanted event)
    Column("tenant", String, nullable=True),
    # what the flow of one correlation shows (`http/flow_admin.py`), written with the row the
    # delivery writes anyway (no statement more): REACTION (an event applied) or TIMEOUT (a
    # process's timeout fired: `event_id` its job id, `consumer` `<Process>.timeout(<name>)`),
    # the event's type, correlation, cause and time (a timeout's due time). NULL in rows from
    # before them.
    Column("kind", String, nullable=True),
    Column("event_type", String, nullable=True),
    Column("correlation_id", String, nullable=True),
    Column("causation_id", String, nullable=True),
    Column("occurred_at", UtcDateTime, nullable=True),
    PrimaryKeyConstraint("consumer", "event_id", name="pk___loom_inbox"),
    Index("ix___loom_inbox_correlation", "correlation_id"),
)
REACTION, TIMEOUT = "reaction", "timeout"

# (claimed_by, claimed_until): the lease a commit stamps on the rows it hands its own relay
Lease = tuple[str, datetime]


class HandedRow(NamedTuple):
    """An outbox row a commit of this process wrote leased to its relay, handed to the relay in
    memory after the commit (`Relay.hand_over`): the columns a claim returns, and the envelope
    the row was written from (no decoding of the payload it was just encoded into)."""

    event_id: UUID
    channel: str
    event_type: str
    payload: str
    correlation_id: str
    causation_id: str | None
    occurred_at: datetime
    attempts: int
    model_revision: str | None
    tenant: str | None
    key_counts: str | None
    trace_context: str | None
    claimed_until: datetime
    envelope: EventEnvelope


_HANDED_COLUMNS = HandedRow._fields[:-1]  # every field but the envelope: columns of the row


def handed_rows(
    rows: Sequence[dict[str, Any]], envelopes: Sequence[EventEnvelope]
) -> list[HandedRow]:
    """The rows a commit wrote leased (`outbox_rows(..., lease=…)`), as its relay takes them."""
    return [
        HandedRow._make([*(row[c] for c in _HANDED_COLUMNS), envelope])
        for row, envelope in zip(rows, envelopes, strict=True)
    ]


_INSERT_OUTBOX = insert(outbox)
_PG_NOTIFY = text(f"SELECT pg_notify('{NOTIFY_CHANNEL}', '')")


_COLUMNS = tuple(c.name for c in outbox.c)
_INSERTS: dict[tuple[int, bool], Any] = {}


def _insert_rows(n: int, notify: bool) -> Any:
    """PostgreSQL: insert n rows, and with `notify` notify in the same round trip,
    `WITH ins AS (INSERT ... RETURNING 1) SELECT pg_notify(...) FROM ins LIMIT 1`
    (a data-modifying CTE always runs to completion, whatever the outer query reads). Written as
    text with typed parameters: SQLAlchemy does not cache the compiled form of a multi-row
    INSERT inside a CTE, and compiling it per commit would cost more than the round trip saved."""
    found = _INSERTS.get((n, notify))
    if found is None:
        rows = ", ".join("(" + ", ".join(f":{c}_{i}" for c in _COLUMNS) + ")" for i in range(n))
        insert_rows = f"INSERT INTO {outbox.name} ({', '.join(_COLUMNS)}) VALUES {rows}"
        if notify:
            insert_rows = (
                f"WITH ins AS ({insert_rows} RETURNING 1) "
                f"SELECT pg_notify('{NOTIFY_CHANNEL}', '') FROM ins LIMIT 1"
            )
        found = text(insert_rows).bindparams(
            *(bindparam(f"{c}_{i}", type_=outbox.c[c].type) for i in range(n) for c in _COLUMNS)
        )
        if n <= 16:  # the common sizes stay compiled; a huge batch is built once and dropped
            _INSERTS[n, notify] = found
    return found


def _numbered(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {f"{c}_{i}": row[c] for i, row in enumerate(rows) for c in _COLUMNS}


@cache
def inbox_insert(dialect: str) -> Any:
    """INSERT ... ON CONFLICT DO NOTHING into the inbox: rowcount 0 means "already processed"."""
    return dialect_insert(dialect)(inbox).on_conflict_do_nothing()


@cache
def _dead_letter_upsert(dialect: str) -> Any:
    stmt = dialect_insert(dialect)(outbox)
    joined = func.coalesce(outbox.c.last_error, literal("")) + "; " + stmt.excluded.last_error
    return stmt.on_conflict_do_update(
        index_elements=[outbox.c.event_id],
        set_={
            "status": DEAD,
            "attempts": stmt.excluded.attempts,
            "last_error": func.substr(joined, 1, MAX_ERROR),
            "claimed_by": None,
            "claimed_until": None,
        },
    )


async def write_dead_letter(conn: AsyncConnection, dialect: str, row: dict[str, Any]) -> None:
    """Keep an event a broker consumer of this service gave up on as a `dead` row (every outbox
    column in `row`), so `loom dead-letters` and the admin routes work on it like on any other;
    when another consumer of this service already dead-lettered the same event, its error is
    appended to theirs."""
    await conn.execute(_dead_letter_upsert(dialect), row)


async def write_events(
    conn: AsyncConnection, dialect: str, rows: list[dict[str, Any]], notify: bool = True
) -> None:
    """Write outbox rows (`outbox_rows`, stamped by `messaging.ordering.stamped_rows`), in order, on
    `conn` (inside its transaction).

    PostgreSQL also gets a `pg_notify` (unless the rows are leased to this process's relay, which
    takes them from memory: `notify` false), which the server delivers only if the transaction
    commits: relays of other replicas wake up exactly when there is something to deliver."""
    if dialect == "postgresql":
        await conn.execute(_insert_rows(len(rows), notify), _numbered(rows))
    else:
        await conn.execute(_INSERT_OUTBOX, rows)


def outbox_rows(
    items: Sequence[tuple[Channel, DomainEvent]],
    model_revision: str | None,
    lease: Lease | None = None,
    envelopes: list[EventEnvelope] | None = None,
) -> list[dict[str, Any]]:
    """The outbox rows of durable events (every column), each with a new envelope stamped with
    `model_revision` (appended to `envelopes` when given); with `lease`, claimed by it."""
    now = clock.now()
    traced = current_stored()
    claimed_by, claimed_until = lease or (None, None)
    rows = []
    for channel, event in items:
        envelope = new_envelope(event, model_revision)
        if envelopes is not None:
            envelopes.append(envelope)
        rows.append(
            {
                "event_id": envelope.event_id,
                "channel": channel.name,
                "event_type": envelope.event_type,
                "payload": encode(event),
                "correlation_id": envelope.correlation_id,
                "causation_id": envelope.causation_id,
                "occurred_at": envelope.occurred_at,
                "available_at": now,
                "attempts": 0,
                "status": PENDING,
                "last_error": None,
                "claimed_by": claimed_by,
                "claimed_until": claimed_until,
                "delivered_at": None,
                "model_revision": envelope.model_revision,
                "tenant": envelope.tenant,
                "key_counts": None,  # stamped by `messaging.ordering.stamped_rows` when it is needed
                "trace_context": traced,
            }
        )
    return rows


async def notify(conn: AsyncConnection, dialect: str) -> None:
    if dialect == "postgresql":
        await conn.execute(_PG_NOTIFY)


def row_fields(row: Any) -> dict[str, Any]:
    """The members of a log line about a stored event: an outbox row, or a broker `Message`
    (the same attribute names) (docs/events.md, "Logs")."""
    return {
        "event_type": row.event_type,
        "event_id": str(row.event_id),
        "correlation_id": row.correlation_id,
        "causation_id": row.causation_id,
        "channel": row.channel,
        "model_revision": row.model_revision or UNKNOWN_REVISION,
    }


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A durable event whose delivery failed `max_attempts` times; kept until redriven."""

    event_id: UUID
    event_type: str
    channel: str
    attempts: int
    last_error: str | None
    occurred_at: datetime
    correlation_id: str
    payload: dict[str, Any]
    model_revision: str | None = None  # None: written before events carried a revision
    tenant: str | None = None  # None: an untenanted context's event


def _payload(text: str) -> dict[str, Any]:
    """A dead letter's payload as a dict; a row that is not a JSON object (often the reason it
    died) is still listed, its text under "_unparsed"."""
    try:
        value = json.loads(text)
    except ValueError:
        return {"_unparsed": text}
    return value if isinstance(value, dict) else {"_unparsed": text}


_DEAD_COLUMNS = (
    outbox.c.event_id,
    outbox.c.event_type,
    outbox.c.channel,
    outbox.c.attempts,
    outbox.c.last_error,
    outbox.c.occurred_at,
    outbox.c.correlation_id,
    outbox.c.payload,
    outbox.c.model_revision,
    outbox.c.tenant,
)

# a redriven event's delivery starts a new trace, linked to the one that raised it (`Tracer.origin`)
_REDRIVEN_TRACE = {
    outbox.c.trace_context: case(
        (outbox.c.trace_context.is_(None), None),
        else_=literal(REDRIVEN) + outbox.c.trace_context,
    )
}
_REDRIVEN = (
    outbox.c.event_id,
    outbox.c.event_type,
    outbox.c.channel,
    outbox.c.correlation_id,
    outbox.c.causation_id,
    outbox.c.model_revision,
)


class Outbox:
    """`service.outbox`: dead letters and counts (the relay does the delivering)."""

    def __init__(self, units: Units, relay: Wakes) -> None:
        self._units = units
        self._relay = relay

    async def dead_letters(
        self, limit: int = 50, offset: int = 0, tenant: str | None = None, status: str = DEAD
    ) -> list[DeadLetter]:
        """Dead letters, oldest event first (`tenant`: only that tenant's; `status` ARCHIVED:
        the archived ones)."""
        stmt = (
            select(*_DEAD_COLUMNS)
            .where(outbox.c.status == status, *_of_tenant(tenant))
            .order_by(outbox.c.event_id)
            .limit(limit)
            .offset(offset)
        )
        async with self._units.engine.connect() as conn:
            rows = (await conn.execute(stmt)).all()
        return [
            DeadLetter(
                event_id=r.event_id,
                event_type=r.event_type,
                channel=r.channel,
                attempts=r.attempts,
                last_error=r.last_error,
                occurred_at=r.occurred_at,
                correlation_id=r.correlation_id,
                payload=_payload(r.payload),
                model_revision=r.model_revision,
                tenant=r.tenant,
            )
            for r in rows
        ]

    async def counts(self, tenant: str | None = None) -> dict[str, int]:
        """Rows per status: {"pending": n, "delivered": n, "dead": n} (`tenant`: its rows)."""
        stmt = (
            select(outbox.c.status, func.count())
            .where(*_of_tenant(tenant))
            .group_by(outbox.c.status)
        )
        async with self._units.engine.connect() as conn:
            found = {status: int(n) for status, n in (await conn.execute(stmt)).all()}
        return {status: found.get(status, 0) for status in (PENDING, DELIVERED, DEAD)}

    async def prune_inbox(self, before: datetime) -> int:
        """Delete inbox records processed before `before`; answers how many. Keep them longer
        than any redelivery can come: the lease, every retry, and the time a dead letter may wait
        before it is redriven (a redriven event whose record is gone is applied again)."""
        async with self._units.transaction() as work:
            conn = await work.connection()
            result = await conn.execute(delete(inbox).where(inbox.c.processed_at < before))
        return int(result.rowcount)

    async def redrive(self, event_id: UUID, tenant: str | None = None) -> bool:
        """Put one dead letter back in the queue (attempts from zero); False if there is none
        (`tenant`: none of that tenant's)."""
        where = (outbox.c.event_id == event_id, *_of_tenant(tenant))
        stmt = outbox_queue.redrive(*where).values(_REDRIVEN_TRACE).returning(*_REDRIVEN)
        return bool(await self._redrive(stmt))

    async def redrive_many(self, event_ids: Sequence[UUID], tenant: str | None = None) -> int:
        """Put these dead letters back in the queue, in one transaction; answers how many were
        dead (`tenant`: of that tenant)."""
        where = (outbox.c.event_id.in_(list(event_ids)), *_of_tenant(tenant))
        stmt = outbox_queue.redrive(*where).values(_REDRIVEN_TRACE).returning(*_REDRIVEN)
        return await self._redrive(stmt)

    async def redrive_all(self) -> int:
        """Put every dead letter back in the queue; answers how many."""
        stmt = outbox_queue.redrive().values(_REDRIVEN_TRACE).returning(*_REDRIVEN)
        return await self._redrive(stmt)

    async def _redrive(self, stmt: Any) -> int:
        units = self._units
        async with units.transaction() as work:
            conn = await work.connection()
            rows = (await conn.execute(stmt, {"now": clock.now()})).all()
            if rows:
                await notify(conn, units.dialect)
        for row in rows:
            log_fact("event_redriven", logging.INFO, row_fields(row))
        if rows:
            self._relay.wake()
        return len(rows)


def _of_tenant(tenant: str | None) -> tuple[ColumnElement[bool], ...]:
    """The condition keeping one tenant's rows; none (every row) for None."""
    return () if tenant is None else (outbox.c.tenant == tenant,)
