"""The DBOS side of bench/processes.py: the equivalent durable workflow on the same PostgreSQL
server, measured in the same run, in the same process, one step at a time, alternating with Loom.

One process step in DBOS is one workflow (`process_step`): a checkpointed step that updates the
instance's state row (version-checked, as Loom's), a durable event (`set_event`: the command,
recorded with the step), and a delayed workflow enqueued one hour ahead (the timeout; DBOS's
durable timer). Each row DBOS keeps (workflow status, step outputs, events, the delayed workflow)
is written to its system database on the same server.

Needs the `dbos` package (PyPI); without it, `compare` answers why it did not run.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

WORKFLOW_TIMEOUT_NAME = "loom_bench_timeout"


async def compare(cluster: Any, n: int, rounds: int) -> str:
    """A markdown table: Loom steps/s vs DBOS workflows/s on the same server."""
    try:
        import dbos  # noqa: F401
    except ImportError:
        return "DBOS: skipped: the `dbos` package is not installed (`pip install dbos`)."
    import asyncpg  # type: ignore[import-untyped]

    app_db, sys_db = "loom_bench_app", "loom_bench_dbos"
    conn = await asyncpg.connect(cluster.dsn())
    try:
        for name in (app_db, sys_db):
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    try:
        loom_rate, dbos_rate = await _measure(cluster, app_db, sys_db, n, rounds)
    except Exception as exc:  # noqa: BLE001 - report, do not hide the Loom figures
        return f"DBOS: could not run: {type(exc).__name__}: {exc}"
    return (
        f"DBOS comparison, median of {rounds} rounds x {n} steps, one at a time\n"
        "| PostgreSQL 15 | steps/s |\n|---|---|\n"
        f"| Loom process step (state + timer + outbox, one commit) | {loom_rate:.0f} |\n"
        f"| DBOS workflow (checkpointed state step + event + delayed workflow) | {dbos_rate:.0f} |\n"
        f"| **Loom / DBOS** | **{loom_rate / dbos_rate:.2f}** |"
    )


async def _measure(
    cluster: Any, app_db: str, sys_db: str, n: int, rounds: int
) -> tuple[float, float]:
    from dbos import DBOS, DBOSConfig, EnqueueOptions
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    from bench.processes import KEYS, Reminder, _service, remind_step

    app = create_async_engine(cluster.url(app_db))
    async with app.begin() as conn:
        await conn.execute(
            text("CREATE TABLE dbos_state (key text PRIMARY KEY, version int, state text)")
        )
        await conn.execute(
            text("INSERT INTO dbos_state SELECT 'k' || i, 1, '{}' FROM generate_series(0, :n) i"),
            {"n": KEYS - 1},
        )

    config: DBOSConfig = {
        "name": "loom-bench",
        "system_database_url": cluster.dsn(sys_db),
        "log_level": "WARNING",
        "run_admin_server": False,  # type: ignore[typeddict-unknown-key]
    }
    DBOS(config=config)

    @DBOS.step()
    async def save_state(key: str, n: int) -> int:
        async with app.begin() as conn:
            row = (
                await conn.execute(
                    text(
                        "UPDATE dbos_state SET version = version + 1, state = :s "
                        "WHERE key = :k RETURNING version"
                    ),
                    {"k": key, "s": f'{{"n":{n}}}'},
                )
            ).scalar_one()
        return int(row)

    @DBOS.workflow(name=WORKFLOW_TIMEOUT_NAME)
    async def timeout(key: str) -> None:
        return None

    @DBOS.workflow()
    async def process_step(key: str, n: int) -> None:
        await save_state(key, n)
        await DBOS.set_event_async("command", {"remind": key, "n": n})
        options = EnqueueOptions(
            queue_name="loom_bench_timeouts",
            workflow_name=WORKFLOW_TIMEOUT_NAME,
            delay_seconds=3600,
        )
        await DBOS.enqueue_workflow_with_options_async(options, key)

    DBOS.launch()
    await DBOS.register_queue_async("loom_bench_timeouts")
    service = await _service(cluster.url(app_db))
    loom_rates, dbos_rates = [], []
    keys = [f"k{i}" for i in range(KEYS)]
    try:
        for key in keys:
            await service.processes.run(Reminder, key, remind_step(key))
        for _ in range(rounds):
            start = time.perf_counter()
            for i in range(n):
                key = keys[i % KEYS]
                await service.processes.run(Reminder, key, remind_step(key))
            loom_rates.append(n / (time.perf_counter() - start))
            start = time.perf_counter()
            for i in range(n):
                handle = await DBOS.start_workflow_async(process_step, keys[i % KEYS], i)
                await handle.get_result()
            dbos_rates.append(n / (time.perf_counter() - start))
    finally:
        await service.dispose()
        DBOS.destroy()
        await app.dispose()
        await asyncio.sleep(0)
    return statistics.median(loom_rates), statistics.median(dbos_rates)
