"""The tables of process managers, timeouts and context timers (created by
`Service.create_schema()` when the service uses processes, like the outbox tables).

- `__loom_processes`: one row per instance, keyed by (process, key): its JSON state, the process
  version that wrote it, a save counter for optimistic concurrency, and whether it ended.
- `__loom_timers`: one row per armed (or dead) timeout, keyed by its job id, at most one per
  (process, tenant, key, name). `due_at` is when it was due; `available_at` when it may next be claimed
  (later than `due_at` after a failed attempt). A scheduler claims a row with a lease
  (`claimed_by`, `claimed_until`); the row is deleted in the transaction of the handler that
  consumed it.
- `__loom_ticks`: one row per context timer: when its next tick is due.
- `__loom_episodes`: one row per ended episode of a generated process workflow's instance (the
  instance row itself holds the current one), keyed by (process, tenant, key, episode): when it started
  and ended, how (`completed`), and its final state as the instance route answered it (JSON).

Every time is `loom.runtime.clock.now()` passed as a parameter, never the database's clock.

`tenant` is the tenant of a tenanted context's instance (docs/language.md#tenants), `""` for an
untenanted one: it is part of the key (two tenants may use the same correlation key), so it
cannot be NULL, which a key would hold distinct from every other NULL. `NO_TENANT` is that `""`.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
)

from loom.runtime.values.types import UtcDateTime

ARMED, DEAD = "armed", "dead"
NO_TENANT = ""


def _tenant() -> Column[str]:
    # existing rows (written before tenants) are untenanted: the server default fills them
    return Column(
        "tenant", String, nullable=False, server_default=NO_TENANT, info={"loom": {"default": ""}}
    )


process_metadata = MetaData()

processes = Table(
    "__loom_processes",
    process_metadata,
    Column("process", String, nullable=False),
    Column("key", String, nullable=False),
    Column("version", Integer, nullable=False),
    Column("state", Text, nullable=False),
    Column("state_version", Integer, nullable=False),
    Column("ended", Boolean, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("process", "key", name="pk___loom_processes"),
)

timers = Table(
    "__loom_timers",
    process_metadata,
    Column("job_id", Uuid, primary_key=True),
    Column("process", String, nullable=False),
    _tenant(),
    Column("key", String, nullable=False),
    Column("name", String, nullable=False),
    Column("due_at", UtcDateTime, nullable=False),
    Column("available_at", UtcDateTime, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("status", String, nullable=False),
    Column("last_error", Text, nullable=True),
    Column("correlation_id", String, nullable=True),
    Column("armed_at", UtcDateTime, nullable=False),
    Column("claimed_by", String, nullable=True),
    Column("claimed_until", UtcDateTime, nullable=True),
    # the W3C trace context of the span that armed it (`values/tracing.py`): its firing starts a
    # new trace linked to that one; NULL when the service did not trace
    Column("trace_context", Text, nullable=True),
    UniqueConstraint("process", "tenant", "key", "name", name="uq___loom_timers_name"),
    # the scheduler's claim: armed rows, earliest first
    Index("ix___loom_timers_due", "status", "available_at"),
)

ticks = Table(
    "__loom_ticks",
    process_metadata,
    Column("name", String, primary_key=True),
    Column("next_at", UtcDateTime, nullable=False),
    Column("last_run_at", UtcDateTime, nullable=True),
)

episodes = Table(
    "__loom_episodes",
    process_metadata,
    Column("process", String, nullable=False),
    _tenant(),
    Column("key", String, nullable=False),
    Column("episode", Integer, nullable=False),
    Column("started_at", UtcDateTime, nullable=True),  # unknown for rows older than episodes
    Column("ended_at", UtcDateTime, nullable=True),
    Column("status", String, nullable=False),
    Column("state", Text, nullable=False),
    PrimaryKeyConstraint("process", "tenant", "key", "episode", name="pk___loom_episodes"),
)
