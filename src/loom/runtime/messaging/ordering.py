"""Per-key order across consumer replicas: the counts a producer stamps on each message bound for
a broker, and the progress a consumer keeps of what it applied (the rule: `messaging/key_order.py`).

`__loom_key_counts` (producer): per (channel, key, event type), how many events were committed;
upserted in the transaction that writes the outbox rows, whose `key_counts` column (the message's
`Loom-Key-Counts`) holds, per type of the channel, the counts up to and including each row.

`__loom_key_progress` (consumer): per (consumer, key, event type), the highest count applied (or
dead-lettered: a poisoned event never blocks its key); written in the reaction's transaction,
beside its inbox row, so it is exactly as durable as the application it records. Counts never go
backwards: a late event leaves them as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, Protocol

from sqlalchemy import (
    BigInteger,
    Column,
    PrimaryKeyConstraint,
    String,
    Table,
    bindparam,
    func,
    select,
    text,
    tuple_,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import BindParameter

from loom.model import messaging as wire
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.events import EventEnvelope
from loom.runtime.messaging.key_order import KeyOrder, OutOfOrder
from loom.runtime.messaging.outbox import (
    NOTIFY_CHANNEL,
    HandedRow,
    Lease,
    handed_rows,
    inbox,
    outbox,
    outbox_rows,
    runtime_metadata,
    write_events,
)
from loom.runtime.messaging.publisher import event_key
from loom.runtime.storage.dialects import dialect_insert
from loom.runtime.values.domain import DomainEvent


class Producer(Protocol):
    """What stamping outbox rows needs (`messaging.outlet.Outlet`)."""

    @property
    def dialect(self) -> str: ...

    @property
    def model_revision(self) -> str | None: ...

    def publishing(self, channel: Channel, event_type: str) -> object | None:
        """Whether a broker publishes `event_type` on `channel` here (not None: it does)."""
        ...


def _per_key(name: str, scope: str, count: str) -> Table:
    """A table of counts per (`scope`, key, event type): the producer's per channel, a
    consumer's per consumer name."""
    return Table(
        name,
        runtime_metadata,
        Column(scope, String, nullable=False),
        Column("key", String, nullable=False),
        Column("event_type", String, nullable=False),
        Column(count, BigInteger, nullable=False),
        PrimaryKeyConstraint(scope, "key", "event_type", name=f"pk_{name}"),
    )


key_counts = _per_key("__loom_key_counts", "channel", "count")
key_progress = _per_key("__loom_key_progress", "consumer", "applied")


@cache
def _count_upsert(dialect: str) -> Any:
    stmt = dialect_insert(dialect)(key_counts)
    return stmt.on_conflict_do_update(
        index_elements=[key_counts.c.channel, key_counts.c.key, key_counts.c.event_type],
        set_={"count": key_counts.c.count + stmt.excluded["count"]},
    )


@cache
def _progress_upsert(dialect: str) -> Any:
    stmt = dialect_insert(dialect)(key_progress)
    # SQLite's two-argument max() is its greatest()
    greatest = func.greatest if dialect == "postgresql" else func.max
    return stmt.on_conflict_do_update(
        index_elements=[key_progress.c.consumer, key_progress.c.key, key_progress.c.event_type],
        set_={"applied": greatest(key_progress.c.applied, stmt.excluded.applied)},
    ).returning(key_progress.c.applied)


class _Given(BindParameter[Any]):
    """A parameter of a statement built once whose value every execution gives: not among the
    values SQLAlchemy extracts from the statement's cache key, so an execution does not map the
    cached statement's parameters onto its own, one by one (for `_entry_of_first`'s twelve, about
    2 % of a reaction's Python). Its key and type stay in the cache key."""

    inherit_cache = True

    def _gen_cache_key(self, anon_map: Any, bindparams: Any) -> Any:
        return super()._gen_cache_key(anon_map, None)  # type: ignore[no-untyped-call]


@cache
def _entry_of_first() -> Any:
    """PostgreSQL: the inbox row and the progress of a key's first message in one statement
    (one round trip fewer per reaction, the commonest case). The progress is written only when
    the inbox row was: no row back means a previous delivery already applied the event."""
    insert = dialect_insert("postgresql")
    entered = (
        insert(inbox)
        .values({c.name: _Given(c.name, type_=c.type) for c in inbox.c})
        .on_conflict_do_nothing()
        .returning(inbox.c.consumer)
        .cte("entered")
    )
    progress = key_progress.c
    values = select(
        entered.c.consumer,
        _Given("key", type_=progress.key.type),
        _Given("event_type", type_=progress.event_type.type),
        _Given("applied", type_=progress.applied.type),
    )
    stmt = insert(key_progress).from_select(
        [progress.consumer, progress.key, progress.event_type, progress.applied], values
    )
    return stmt.on_conflict_do_update(
        index_elements=[progress.consumer, progress.key, progress.event_type],
        set_={"applied": func.greatest(progress.applied, stmt.excluded.applied)},
    ).returning(progress.applied)


@cache
def _count_upsert_returning(dialect: str) -> Any:
    return _count_upsert(dialect).returning(key_counts.c.count)


def _sole_count(
    channel: Channel, publishing: Callable[[Channel, str], object | None], event_type: str
) -> bool:
    """Whether `event_type` is the one type of `channel` this service publishes to a broker:
    then a key's counts are that type's count alone, nothing to read back."""
    return {t for t in channel.events if publishing(channel, t) is not None} == {event_type}


@cache
def _counted_row(notify: bool) -> Any:
    """PostgreSQL, one event on a channel that carries no other type this service publishes
    (`write_durable`'s commonest case): its key's count upserted, its outbox row written with
    that count as its key counts, and (`notify`) the relays notified, in one round trip; it
    answers the row's key counts. The channel and event type parameters are the row's own;
    `count_key` is the key."""
    columns = [c.name for c in outbox.c if c.name != "key_counts"]
    counts, rows = key_counts.name, outbox.name
    notified = f", pg_notify('{NOTIFY_CHANNEL}', '')" if notify else ""
    return text(
        f"WITH counted AS (INSERT INTO {counts} (channel, key, event_type, count) "
        "VALUES (:channel, :count_key, :event_type, 1) "
        "ON CONFLICT (channel, key, event_type) "
        f"DO UPDATE SET count = {counts}.count + 1 RETURNING count), "
        f"ins AS (INSERT INTO {rows} ({', '.join(columns)}, key_counts) "
        f"SELECT {', '.join(f':{c}' for c in columns)}, "
        "CAST(:event_type AS VARCHAR) || '=' || counted.count FROM counted "
        f"RETURNING key_counts) SELECT key_counts{notified} FROM ins"
    ).bindparams(
        *(bindparam(c, type_=outbox.c[c].type) for c in columns),
        bindparam("count_key", type_=key_counts.c.key.type),
    )


# built once: one commit's counts, read back for all its (channel, key) pairs
_COUNTS_OF = select(
    key_counts.c.channel, key_counts.c.key, key_counts.c.event_type, key_counts.c.count
).where(tuple_(key_counts.c.channel, key_counts.c.key).in_(bindparam("pairs", expanding=True)))


async def write_durable(
    conn: AsyncConnection,
    producer: Producer,
    items: Sequence[tuple[Channel, DomainEvent]],
    lease: Lease | None = None,
) -> list[HandedRow]:
    """Write the outbox rows of the durable events `items` on `conn`, stamped. With `lease`, the
    rows are claimed by it (no NOTIFY: no other relay is to take them) and answered, for the
    relay holding the lease to take after the commit; without, nothing is answered."""
    envelopes: list[EventEnvelope] = []
    if producer.dialect == "postgresql" and len(items) == 1:
        ((channel, event),) = items
        if _sole_count(channel, producer.publishing, event.event_type):
            (row,) = outbox_rows(items, producer.model_revision, lease, envelopes)
            del row["key_counts"]  # the statement writes it
            row["count_key"] = event_key(event)
            written = await conn.execute(_counted_row(lease is None), row)
            if lease is None:
                return []
            row["key_counts"] = written.scalar_one()
            return handed_rows([row], envelopes)
    rows = await stamped_rows(conn, producer, items, lease, envelopes)
    await write_events(conn, producer.dialect, rows, notify=lease is None)
    return [] if lease is None else handed_rows(rows, envelopes)


async def stamped_rows(
    conn: AsyncConnection,
    producer: Producer,
    items: Sequence[tuple[Channel, DomainEvent]],
    lease: Lease | None = None,
    envelopes: list[EventEnvelope] | None = None,
) -> list[dict[str, Any]]:
    """`outbox_rows` of `items`, those the relay publishes to a broker stamped with their key
    counts, counted on `conn` inside the caller's transaction.

    The increments are added in the database (`count + n`), rows in key order, so two
    transactions raising events of one key never count one number twice, nor deadlock; each
    row's counts are then this commit's view: its own types' counts, and the others' as
    committed."""
    rows = outbox_rows(items, producer.model_revision, lease, envelopes)
    publishing = producer.publishing
    counted = [
        (i, channel.name, event_key(event), event.event_type)
        for i, (channel, event) in enumerate(items)
        if publishing(channel, event.event_type) is not None
    ]
    if not counted:
        return rows
    increments = Counter((c, k, t) for _, c, k, t in counted)
    pairs = sorted({(c, k) for _, c, k, _ in counted})
    totals: dict[tuple[str, str], dict[str, int]] = {pair: {} for pair in pairs}
    first, _, _, first_type = counted[0]
    if len(increments) == 1 and _sole_count(items[first][0], publishing, first_type):
        # the commonest commit (events of one type, of one key, on a channel this service
        # publishes no other type of): the upsert answers the key's only count, no read after
        ((c, k, t), n) = next(iter(increments.items()))
        params = {"channel": c, "key": k, "event_type": t, "count": n}
        now = await conn.execute(_count_upsert_returning(producer.dialect), params)
        totals[c, k][t] = int(now.scalar_one())
    else:
        await conn.execute(
            _count_upsert(producer.dialect),
            [
                {"channel": c, "key": k, "event_type": t, "count": n}
                for (c, k, t), n in sorted(increments.items())
            ],
        )
        for c, k, t, n in await conn.execute(_COUNTS_OF, {"pairs": pairs}):
            totals[c, k][t] = int(n)
    for (c, k, t), n in increments.items():  # back to the counts before this commit's events
        totals[c, k][t] -= n
    for i, c, k, t in counted:
        counts = totals[c, k]
        counts[t] += 1
        rows[i]["key_counts"] = wire.format_key_counts({u: n for u, n in counts.items() if n})
    return rows


def _applied_stmt(*, lock: bool) -> Any:
    # rows in type order: two replicas lock a key's rows in the same order, never deadlock
    stmt = (
        select(key_progress.c.event_type, key_progress.c.applied)
        .where(
            key_progress.c.consumer == bindparam("consumer"),
            key_progress.c.key == bindparam("key"),
            key_progress.c.event_type.in_(bindparam("types", expanding=True)),
        )
        .order_by(key_progress.c.event_type)
    )
    return stmt.with_for_update() if lock else stmt


_APPLIED = {lock: _applied_stmt(lock=lock) for lock in (False, True)}


async def applied(conn: AsyncConnection, order: KeyOrder, *, lock: bool = False) -> dict[str, int]:
    """What `order`'s consumer applied of its key, per type it checks (`lock`: the rows are
    locked until the transaction ends, PostgreSQL's `FOR UPDATE`)."""
    params = {"consumer": order.consumer, "key": order.key, "types": list(order.types)}
    rows = await conn.execute(_APPLIED[lock], params)
    return {t: int(n) for t, n in rows}


def _progress_params(order: KeyOrder) -> dict[str, Any]:
    return {
        "consumer": order.consumer,
        "key": order.key,
        "event_type": order.event_type,
        "applied": order.counts[order.event_type],
    }


async def record_progress(conn: AsyncConnection, dialect: str, order: KeyOrder) -> int:
    """Count `order`'s message as applied by its consumer (never lowering the count); answer
    its type's count now (above the message's own: a later one was applied before it)."""
    now = (await conn.execute(_progress_upsert(dialect), _progress_params(order))).scalar_one()
    order.recorded = True
    return int(now)


async def enter_first(conn: AsyncConnection, order: KeyOrder, inbox_row: dict[str, Any]) -> bool:
    """PostgreSQL, a key's first message (`order.first`): write its inbox row and record it in
    one statement, as `claim_turn` would after the inbox row; False (nothing written) when the
    inbox already holds the event."""
    params = {**inbox_row, **_progress_params(order)}
    now = (await conn.execute(_entry_of_first(), params)).scalar_one_or_none()
    if now is None:
        return False
    order.recorded = True
    order.late = int(now) > order.counts[order.event_type]
    return True


async def claim_turn(conn: AsyncConnection, dialect: str, order: KeyOrder) -> None:
    """In the reaction's transaction, after its inbox row: check that every earlier event of the
    key is applied (or the gap limit passed), and record this one. The progress rows are locked
    (PostgreSQL; SQLite serialises writers), so two replicas can never apply two events of one
    key at once: the second waits for the first's commit and then sees it. `OutOfOrder` when an
    earlier one is still missing."""
    if order.first:  # nothing before it to wait for: one statement, no read
        order.late = await record_progress(conn, dialect, order) > order.counts[order.event_type]
        return
    done = await applied(conn, order, lock=dialect == "postgresql")
    if order.missing(done) and not order.forced:
        order.blocked = True
        raise OutOfOrder(f"{order.consumer}: an earlier event of key {order.key!r} is not applied")
    order.late = order.overtaken(done)
    await record_progress(conn, dialect, order)
