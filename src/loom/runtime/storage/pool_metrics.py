"""The connection pool's metrics (docs/observability.md#metrics): connections in use, read at
scrape time, and checkouts that had to wait for one, counted as they happen."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import QueuePool

from loom.runtime.values.metrics import Gauge, Metrics


def count_pool_waits(engine: AsyncEngine, metrics: Metrics) -> None:
    """Count in `metrics.pool_waits` each checkout that finds no idle connection and no room to
    open one (it waits, up to the pool timeout). SQLAlchemy has no event before a checkout, so
    the pool's own getter is wrapped (a pool of one connection, SQLite in memory, never waits)."""
    pool: Any = engine.sync_engine.pool
    if not isinstance(pool, QueuePool) or pool._max_overflow < 0:  # unbounded: never waits
        return
    take = pool._do_get

    def counted() -> Any:
        if pool.checkedin() == 0 and pool.overflow() >= pool._max_overflow:
            metrics.pool_waits.inc()
        return take()

    setattr(pool, "_do_get", counted)  # noqa: B010 - mypy refuses assigning a method


def pool_gauges(engine: AsyncEngine) -> list[Gauge]:
    """`loom_db_pool_in_use`: the connections checked out now."""
    pool: Any = engine.sync_engine.pool
    in_use = Gauge("loom_db_pool_in_use", "Database connections in use now.")
    in_use.values[()] = float(pool.checkedout()) if isinstance(pool, QueuePool) else 0.0
    return [in_use]
