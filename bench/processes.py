"""Benchmark: process-manager steps and durable timeouts.

Steps/s: one step of a process manager, run by `ProcessRunner.run` in its own unit of work: load
the instance, decide, save the new state (version-checked), re-arm its timeout (the timer row is
replaced) and send one command on a durable channel (its outbox row), all in one commit. The
reference, in the same run on the same engine, alternating with it: the same step written by hand
in one transaction, one statement each, built once: read the state row (`FOR UPDATE` on
PostgreSQL, as the step's load), decide from it, a version-checked UPDATE of it, an upsert of a
timer row, an INSERT of an outbox row. Target: >= 0.7. The same without the timer row is printed
too, as the floor.

Lateness: timeouts armed 50-500 ms ahead (spread), fired by the service's background scheduler
on the real clock; lateness = when the handler starts - when the timeout was due. Three paths:
armed by this service (its step wakes its scheduler), armed by another service on the same
database (PostgreSQL: the arming step's NOTIFY wakes the firing scheduler; SQLite: found by
polling, every 1 s here), and, on PostgreSQL, armed by another service with LISTEN off (polling
only).

DBOS (PostgreSQL only, when the `dbos` package is installed): the equivalent durable workflow on
the same PostgreSQL server, one workflow per step: a checkpointed step that updates the state row,
a durable message (the command), and a child workflow that sleeps durably (the timeout). Target:
Loom >= 3x DBOS.

    .venv/bin/python bench/processes.py                     # SQLite and PostgreSQL
    .venv/bin/python bench/processes.py --db postgres --steps 3000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, TypeGuard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from loom.runtime import Channel, DomainEvent, Service, Work, clock, new_id
from loom.runtime.messaging.outbox import outbox
from loom.runtime.processes import Decision, Timeout, TimeoutDue
from loom.runtime.types import UtcDateTime
from loom.runtime.values.codec import encode

logging.getLogger("loom").setLevel(logging.WARNING)


@dataclass(frozen=True, kw_only=True)
class Remind(DomainEvent):
    event_type: ClassVar[str] = "Bench.Remind"
    key: str
    n: int


class Reminder:
    name: ClassVar[str] = "Bench.Reminder"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[dict[str, int]]:
        return isinstance(value, dict) and "n" in value


def remind_step(key: str) -> Any:
    def step(current: dict[str, int] | None) -> Decision[dict[str, int]]:
        n = 0 if current is None else current["n"] + 1
        return Decision(
            {"n": n},
            commands=[Remind(key=key, n=n)],
            timeouts=[Timeout("remind", after=timedelta(hours=1))],
        )

    return step


raw_metadata = MetaData()
raw_state = Table(
    "bench_raw_state",
    raw_metadata,
    Column("key", String, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("state", String, nullable=False),
)
raw_timer = Table(
    "bench_raw_timer",
    raw_metadata,
    Column("key", String, primary_key=True),
    Column("job_id", String, nullable=False),
    Column("due_at", UtcDateTime, nullable=False),
)
CHANNELS = [Channel("bench", ["Bench.Remind"])]
KEYS = 50


async def _service(url: str, **options: Any) -> Service:
    service = Service.from_url(url, raw_metadata, channels=CHANNELS, processes=True, **options)
    service.events.register(Remind)
    await service.create_schema()
    return service


def _deciding(decision: Decision[Any]) -> Callable[[Any], Decision[Any]]:
    """A step that decides `decision` whatever the state."""
    return lambda _current: decision


async def steps(url: str, n: int, rounds: int) -> dict[str, float]:
    """Median steps/s of the process path, of the same three rows by hand, and of the two-row
    floor, taking turns."""
    service = await _service(url)
    keys = [f"k{i}" for i in range(KEYS)]
    async with service.transaction() as work:
        conn = await work.connection()
        await conn.execute(
            insert(raw_state), [{"key": k, "version": 1, "state": "{}"} for k in keys]
        )
    for key in keys:  # the instances exist: every measured step updates one
        await service.processes.run(Reminder, key, remind_step(key))
    upsert = _RAW_TIMER_UPSERT[service.dialect]
    read = _RAW_READ_LOCKED if service.dialect == "postgresql" else _RAW_READ
    rates: dict[str, list[float]] = {"steps": [], "raw": [], "floor": []}
    paths: dict[str, Callable[[str], Awaitable[object]]] = {
        "steps": lambda key: service.processes.run(Reminder, key, remind_step(key)),
        "raw": lambda key: _raw_step(service, key, read, upsert),
        "floor": lambda key: _raw_step(service, key, read, None),
    }
    try:
        for _ in range(rounds):
            # the paths take turns every KEYS steps, so a change of load on a shared machine
            # falls on all of them alike
            spent = dict.fromkeys(paths, 0.0)
            for chunk in range(0, n, KEYS):
                for name, one in paths.items():
                    start = time.perf_counter()
                    for key in keys[: min(KEYS, n - chunk)]:
                        await one(key)
                    spent[name] += time.perf_counter() - start
            for name in paths:
                rates[name].append(n / spent[name])
            await _empty_outbox(service)
    finally:
        await service.dispose()
    found = {name: statistics.median(r) for name, r in rates.items()}
    found["ratio"] = found["steps"] / found["raw"]
    found["floor_ratio"] = found["steps"] / found["floor"]
    return found


_RAW_READ = select(raw_state.c.version, raw_state.c.state).where(raw_state.c.key == text(":k"))
_RAW_READ_LOCKED = _RAW_READ.with_for_update()
_RAW_UPDATE = (
    update(raw_state)
    .where(raw_state.c.key == text(":k"), raw_state.c.version == text(":v"))
    .values(version=text(":v + 1"), state=text(":s"))
)


def _timer_upsert(dialect: Any) -> Any:
    stmt = dialect.insert(raw_timer)
    return stmt.on_conflict_do_update(
        index_elements=["key"],
        set_={"job_id": stmt.excluded.job_id, "due_at": stmt.excluded.due_at},
    )


_RAW_TIMER_UPSERT = {"postgresql": _timer_upsert(postgresql), "sqlite": _timer_upsert(sqlite)}
_RAW_OUTBOX = insert(outbox)


async def _raw_step(service: Service, key: str, read: Any, timer: Any) -> None:
    """The step by hand: read the state, decide (the next count), write it version-checked, re-arm
    the timer (unless `timer` is None), send the command."""
    async with service.transaction() as work:
        conn = await work.connection()
        row = (await conn.execute(read, {"k": key})).one()
        n = json.loads(row.state).get("n", -1) + 1
        params = {"k": key, "v": row.version, "s": json.dumps({"n": n})}
        if (await conn.execute(_RAW_UPDATE, params)).rowcount != 1:
            raise RuntimeError(f"state {key} changed meanwhile")
        if timer is not None:
            due = clock.now() + timedelta(hours=1)
            await conn.execute(timer, {"key": key, "job_id": str(new_id()), "due_at": due})
        await conn.execute(_RAW_OUTBOX, _outbox_row(key, n))


def _outbox_row(key: str, n: int) -> dict[str, Any]:
    now = clock.now()
    event_id = new_id()
    return {
        "event_id": event_id,
        "channel": "bench",
        "event_type": "Bench.Remind",
        "payload": encode(Remind(key=key, n=n)),
        "correlation_id": str(event_id),
        "causation_id": None,
        "occurred_at": now,
        "available_at": now,
        "attempts": 0,
        "status": "pending",
    }


async def _empty_outbox(service: Service) -> None:
    async with service.transaction() as work:
        await (await work.connection()).execute(outbox.delete())


async def lateness(
    url: str, samples: int, *, other: bool, listen: bool = True
) -> tuple[float, float]:
    """p50, p99 in ms between a timeout's due instant and its handler starting."""
    poll = {"poll_interval": 1.0, "listen": listen}
    firing = await _service(url, scheduler_options=poll)
    arming = await _service(url) if other else firing
    late: list[float] = []
    done = asyncio.Event()

    async def handler(due: TimeoutDue, work: Work) -> None:
        late.append((clock.now() - due.due_at).total_seconds() * 1000)
        if len(late) == samples:
            done.set()

    firing.timeouts.register(Reminder.name, handler)
    await firing.start_scheduler()
    rng = random.Random(7)
    try:
        for i in range(samples):
            after = timedelta(milliseconds=rng.randint(50, 500))
            key = f"late-{other}-{listen}-{i}"
            arm = Decision({"n": 0}, timeouts=[Timeout("remind", after=after)])
            await arming.processes.run(Reminder, key, _deciding(arm))
            await asyncio.sleep(rng.uniform(0.0, 0.05))  # arrivals spread over time
        await asyncio.wait_for(done.wait(), timeout=120)
    finally:
        await firing.dispose()
        if other:
            await arming.dispose()
    ordered = sorted(late)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


PATHS = (
    "this service",
    "another service (PostgreSQL: NOTIFY; SQLite: poll 1 s)",
    "another service, LISTEN off (poll 1 s)",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--steps", type=int, default=2000, help="steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=200, help="timeouts timed for lateness")
    parser.add_argument("--dbos-steps", type=int, default=500, help="DBOS workflows per round")
    args = parser.parse_args()

    results: list[tuple[str, dict[str, Any]]] = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            results.append(("SQLite", asyncio.run(_measure(url, args, None))))
    if args.db in ("postgres", "both"):
        from tests.pgcluster import running_cluster

        with running_cluster() as cluster:
            results.append(("PostgreSQL 15", asyncio.run(_measure(cluster.url(), args, cluster))))

    print(f"process steps, median of {args.rounds} rounds x {args.steps} steps (one per commit)")
    print(
        "| database | process step (state + timer + outbox) | the step by hand (read + three "
        "rows) | ratio | without the timer row | ratio to that |"
    )
    print("|---|---|---|---|---|---|")
    for db, r in results:
        s = r["steps"]
        print(
            f"| {db} | {s['steps']:.0f} steps/s | {s['raw']:.0f} tx/s | **{s['ratio']:.2f}** "
            f"| {s['floor']:.0f} tx/s | {s['floor_ratio']:.2f} |"
        )
    print()
    print(f"timeout lateness (handler start - due), {args.samples} timeouts")
    print("| database | armed by | p50 | p99 |")
    print("|---|---|---|---|")
    for db, r in results:
        for path in PATHS:
            if path not in r:
                continue
            p50, p99 = r[path]
            print(f"| {db} | {path} | {p50:.1f} ms | {p99:.1f} ms |")
    for _db, r in results:
        if "dbos" in r:
            print()
            print(r["dbos"])


async def _measure(url: str, args: Any, cluster: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"steps": await steps(url, args.steps, args.rounds)}
    this, other, polling = PATHS
    result[this] = await lateness(url, args.samples, other=False)
    result[other] = await lateness(url, args.samples, other=True)
    if cluster is not None:  # only PostgreSQL has LISTEN to turn off
        result[polling] = await lateness(url, args.samples, other=True, listen=False)
    if cluster is not None and args.dbos_steps:
        from bench.processes_dbos import compare

        result["dbos"] = await compare(cluster, args.dbos_steps, args.rounds)
    return result


if __name__ == "__main__":
    main()
