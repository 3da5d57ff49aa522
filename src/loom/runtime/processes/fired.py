"""A timeout consumed by its handler's transaction, and recorded as fired there.

The scheduler deletes a fired timeout's row in the transaction of its handler (`scheduler.py`).
When the service keeps an inbox (it has durable channels), the same transaction records the
firing there (whether the row is still there or the handler's step already disarmed it), as a row of kind `TIMEOUT` (`messaging/outbox.py`), so the flow of its correlation
(`http/flow_admin.py`) shows it: on PostgreSQL in the very statement that deletes the row (a
data-modifying CTE, no round trip more), on SQLite (in process, no round trip) in a second one.
A service without channels has no inbox: its fired timeouts are not recorded.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import bindparam, delete, literal, select
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.messaging.outbox import TIMEOUT, inbox, inbox_insert
from loom.runtime.processes.tables import timers
from loom.runtime.processes.timers import tenant_of_row
from loom.runtime.storage.dialects import dialect_insert
from loom.runtime.values import clock

_CONSUME = delete(timers).where(timers.c.job_id == bindparam("id"))
# the inbox columns a fired timeout fills from parameters of the same name (the event id is
# the deleted row's job id, the kind TIMEOUT)
_GIVEN = ("consumer", "processed_at", "tenant", "correlation_id", "occurred_at")


def consumer_of(process: str, timeout: str) -> str:
    """The inbox's consumer name of a process's timeout: `<Process>.timeout(<name>)` (beside
    the reactions' `<Process>.on(<Event>)`)."""
    return f"{process}.timeout({timeout})"


@cache
def _consume_and_record() -> Any:
    """PostgreSQL: delete the timer row (when the handler's step did not already: a completing
    step disarms its timeouts) and write its inbox row, in one statement."""
    gone = _CONSUME.cte("gone")  # a data-modifying CTE runs, referenced or not
    given = [bindparam(c, type_=inbox.c[c].type) for c in _GIVEN]
    chosen = select(bindparam("id", type_=inbox.c.event_id.type), literal(TIMEOUT), *given)
    columns = [inbox.c.event_id, inbox.c.kind, *(inbox.c[c] for c in _GIVEN)]
    insert = dialect_insert("postgresql")(inbox).add_cte(gone)
    return insert.from_select(columns, chosen).on_conflict_do_nothing()


async def consume(conn: AsyncConnection, dialect: str, row: Any, recorded: bool) -> None:
    """Delete the claimed timeout `row` (a `__loom_timers` row) in the handler's transaction,
    recording it as fired when the service keeps an inbox (`recorded`)."""
    if not recorded:
        await conn.execute(_CONSUME, {"id": row.job_id})
        return
    params = {
        "id": row.job_id,
        "consumer": consumer_of(row.process, row.name),
        "processed_at": clock.now(),
        "tenant": tenant_of_row(row.tenant),
        "correlation_id": row.correlation_id,
        "occurred_at": row.due_at,
    }
    if dialect == "postgresql":
        await conn.execute(_consume_and_record(), params)
        return
    await conn.execute(_CONSUME, params)
    params.update(event_id=params.pop("id"), kind=TIMEOUT, event_type=None, causation_id=None)
    await conn.execute(inbox_insert(dialect), params)
