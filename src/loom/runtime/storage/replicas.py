"""Each running replica of a service records itself in its database (issue 26 §5.10), so that
`loom migrate apply` can see which revisions of the model are serving before it applies a step
the running code cannot run against (docs/migrations.md#replicas-and-breaking-steps).

A row of `__loom_replicas` per replica: its id, the migration revision the database was at when it
started (its model's schema: `loom run` serves no database behind or ahead of its model), its
model's own `revision` when the model declares one (the one its events carry), where it
runs (host, pid), when it started, and a heartbeat every `HEARTBEAT_S` seconds. A replica stopped
in order deletes its row; one killed leaves it, and its heartbeat ages: a replica is alive while
its heartbeat is younger than `ALIVE_S`. Only a database under migrations (with their record,
`__loom_migrations`) gets the table: the migrations are what reads it. The table is Loom's
bookkeeping, not the model's: no snapshot has it, and the migration engine leaves it out of every
comparison of shapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass

from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, inspect, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "ALIVE_S",
    "HEARTBEAT_S",
    "MIGRATIONS_TABLE",
    "REPLICAS_TABLE",
    "Replica",
    "ReplicaRow",
    "alive_replicas",
    "start_replica",
]

MIGRATIONS_TABLE = "__loom_migrations"  # the migrations' record (loom.migrate.database)
REPLICAS_TABLE = "__loom_replicas"
HEARTBEAT_S = 5.0
ALIVE_S = 3 * HEARTBEAT_S  # a replica whose heartbeat is older is taken for dead

logger = logging.getLogger("loom.replicas")

_metadata = MetaData()
replicas = Table(
    REPLICAS_TABLE,
    _metadata,
    Column("id", String(36), primary_key=True),
    Column("revision", String, nullable=True),
    Column("model_revision", String, nullable=True),
    Column("host", String, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", BigInteger, nullable=False),  # milliseconds since the epoch
    Column("heartbeat_at", BigInteger, nullable=False),
)


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ReplicaRow:
    id: str
    revision: str | None
    model_revision: str | None
    host: str
    pid: int
    started_at: int
    heartbeat_at: int

    def describe(self, now_ms: int) -> str:
        age = max(0, now_ms - self.heartbeat_at) / 1000
        model = f", model revision {self.model_revision}" if self.model_revision else ""
        return (
            f"{self.host} pid {self.pid} (revision {self.revision or 'none'}{model}, last "
            f"heartbeat {age:.0f} s ago)"
        )


def alive_replicas(conn: Connection, now_ms: int | None = None) -> list[ReplicaRow]:
    """The replicas whose heartbeat is younger than ALIVE_S (none without the table)."""
    if not inspect(conn).has_table(REPLICAS_TABLE):
        return []
    now_ms = _now_ms() if now_ms is None else now_ms
    query = (
        select(replicas)
        .where(replicas.c.heartbeat_at >= now_ms - int(ALIVE_S * 1000))
        .order_by(replicas.c.started_at)
    )
    return [ReplicaRow(**row._mapping) for row in conn.execute(query)]


class Replica:
    """This process's row, and the task that keeps its heartbeat."""

    def __init__(self, engine: AsyncEngine, model_revision: str | None = None) -> None:
        self.engine = engine
        self.model_revision = model_revision
        self.id = str(uuid.uuid4())
        self.task: asyncio.Task[None] | None = None
        self.registered = False

    async def start(self) -> None:
        """Record this replica (when the database is under migrations) and start its heartbeat.
        A database that refuses is logged: recording itself never stops a service."""
        try:
            async with self.engine.begin() as conn:
                self.registered = await conn.run_sync(self._register)
        except Exception:
            logger.warning("could not record this replica in the database", exc_info=True)
        if self.registered:
            self.task = asyncio.create_task(self._beat(), name="loom-replica-heartbeat")

    def _register(self, conn: Connection) -> bool:
        if not inspect(conn).has_table(MIGRATIONS_TABLE):
            return False
        replicas.create(conn, checkfirst=True)
        revision = conn.execute(text(f"SELECT max(revision) FROM {MIGRATIONS_TABLE}")).scalar()
        now = _now_ms()
        row = {"id": self.id, "revision": revision, "model_revision": self.model_revision}
        row["host"] = socket.gethostname()
        conn.execute(
            replicas.insert().values(**row, pid=os.getpid(), started_at=now, heartbeat_at=now)
        )
        return True

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            try:
                async with self.engine.begin() as conn:
                    await conn.execute(
                        replicas.update()
                        .where(replicas.c.id == self.id)
                        .values(heartbeat_at=_now_ms())
                    )
            except Exception:
                logger.debug("replica heartbeat failed", exc_info=True)

    async def stop(self) -> None:
        """Stop the heartbeat and delete this replica's row."""
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if not self.registered:
            return
        try:
            async with self.engine.begin() as conn:
                await conn.execute(replicas.delete().where(replicas.c.id == self.id))
        except Exception:
            logger.debug("could not delete this replica's row", exc_info=True)


async def start_replica(engine: AsyncEngine, model_revision: str | None = None) -> Replica:
    replica = Replica(engine, model_revision)
    await replica.start()
    return replica
