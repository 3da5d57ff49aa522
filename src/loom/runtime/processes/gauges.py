"""The process tables' gauges, read at scrape time (docs/observability.md#metrics): timeouts armed
and how late the most overdue one is, dead timeouts, and instances per process and state
(`running`, or `completed` as an episode's status says). Small grouped queries (the timers' status
index, one per process's instance table); never per request."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Select, Table, func, literal, select
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.runtime.processes.episodes import COMPLETED, RUNNING
from loom.runtime.processes.tables import ARMED, DEAD, processes, timers
from loom.runtime.values import clock
from loom.runtime.values.metrics import Gauge, age_seconds

_TIMERS = (
    select(timers.c.status, func.count(), func.min(timers.c.due_at))
    .where(timers.c.status.in_((ARMED, DEAD)))
    .group_by(timers.c.status)
)
_PROCESSES = select(processes.c.process, processes.c.ended, func.count()).group_by(
    processes.c.process, processes.c.ended
)


def _instances(process: str, table: Table) -> Select[str, bool, int]:
    """Instances of one generated process workflow by `ended` (a workflow that never ends has no
    such column: all running)."""
    ended = table.c.get("ended")
    if ended is None:
        return select(literal(process), literal(False), func.count()).select_from(table)
    return select(literal(process), ended, func.count()).group_by(ended)


async def process_gauges(engine: AsyncEngine, tracked: Mapping[str, Table]) -> list[Gauge]:
    """`loom_timers_pending`, `loom_timers_overdue_seconds` (how long past its due time the
    earliest armed timeout is; 0: none is late), the timeouts' `loom_dead_letters{kind="timeout"}`
    and `loom_process_instances{process,state}`: of the process workflows in `tracked` (process ->
    its instance table; 0 for one with none) and of the process managers kept in
    `__loom_processes`."""
    pending = Gauge("loom_timers_pending", "Timeouts armed, not fired yet.")
    overdue = Gauge(
        "loom_timers_overdue_seconds",
        "How long past its due time the earliest armed timeout is (0: none is late).",
    )
    dead = Gauge("loom_dead_letters", "Dead letters waiting for a redrive, by kind.", ("kind",))
    instances = Gauge(
        "loom_process_instances",
        "Process instances, by process and state (running or completed).",
        ("process", "state"),
    )
    pending.values[()] = overdue.values[()] = 0.0
    dead.values[("timeout",)] = 0.0
    for name in tracked:
        instances.values[(name, RUNNING)] = instances.values[(name, COMPLETED)] = 0.0
    now = clock.now()
    async with engine.connect() as conn:
        timer_rows = (await conn.execute(_TIMERS)).all()
        instance_rows = list((await conn.execute(_PROCESSES)).all())
        for name, table in tracked.items():
            instance_rows += (await conn.execute(_instances(name, table))).all()
    for status, count, earliest in timer_rows:
        if status == ARMED:
            pending.values[()] = float(count)
            overdue.values[()] = age_seconds(now, earliest)
        else:
            dead.values[("timeout",)] = float(count)
    for process, ended, count in instance_rows:
        state = (process, COMPLETED if ended else RUNNING)
        instances.values[state] = instances.values.get(state, 0.0) + float(count)
    return [pending, overdue, dead, instances]
