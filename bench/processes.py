"""Benchmark: process-manager steps and durable timeouts.

Steps/s: one step of a process manager, run by `ProcessRunner.run` in its own unit of work: load
the instance, decide, save the new state (version-checked), re-arm its timeout (the timer row is
replaced) and send one command on a durable channel (its outbox row), all in one commit. The
reference, in the same run on the same engine, alternating with it: the raw two-row transaction,
one version-checked UPDATE of a state row and one INSERT of an outbox row. Target: >= 0.6.

Lateness: timeouts armed 50-500 ms ahead (spread), fired by the service's background scheduler
on the real clock; lateness = when the handler starts - when the timeout was due. Two paths: armed
by this service (its step wakes its scheduler), and armed by another service on the same database
(found by polling: bounded by the poll interval, 1 s here).

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
import logging
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, TypeGuard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import Column, Integer, MetaData, String, Table, insert, text, update

from loom.runtime import Channel, DomainEvent, Service, Work, clock, new_id
from loom.runtime._codec import encode
from loom.runtime._outbox import outbox
from loom.runtime.processes import Decision, Timeout, TimeoutDue

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
CHANNELS = [Channel("bench", ["Bench.Remind"])]
KEYS = 50


async def _service(url: str, **options: Any) -> Service:
    service = Service.from_url(url, raw_metadata, channels=CHANNELS, processes=True, **options)
    service.events.register(Remind)
    await service.create_schema()
    return service


async def steps(url: str, n: int, rounds: int) -> dict[str, float]:
    """Median steps/s of the process path and of the raw two-row transaction, alternating."""
    service = await _service(url)
    keys = [f"k{i}" for i in range(KEYS)]
    async with service.transaction() as work:
        conn = await work.connection()
        await conn.execute(
            insert(raw_state), [{"key": k, "version": 1, "state": "{}"} for k in keys]
        )
    for key in keys:  # the instances exist: every measured step updates one
        await service.processes.run(Reminder, key, remind_step(key))
    versions = dict.fromkeys(keys, 1)
    step_rates, raw_rates = [], []
    try:
        for _ in range(rounds):
            start = time.perf_counter()
            for i in range(n):
                key = keys[i % KEYS]
                await service.processes.run(Reminder, key, remind_step(key))
            step_rates.append(n / (time.perf_counter() - start))
            start = time.perf_counter()
            for i in range(n):
                key = keys[i % KEYS]
                await _raw_step(service, key, versions)
            raw_rates.append(n / (time.perf_counter() - start))
            await _empty_outbox(service)
    finally:
        await service.dispose()
    step_rate, raw_rate = statistics.median(step_rates), statistics.median(raw_rates)
    return {"steps": step_rate, "raw": raw_rate, "ratio": step_rate / raw_rate}


_RAW_UPDATE = (
    update(raw_state)
    .where(raw_state.c.key == text(":k"), raw_state.c.version == text(":v"))
    .values(version=text(":v + 1"), state=text(":s"))
)


async def _raw_step(service: Service, key: str, versions: dict[str, int]) -> None:
    v = versions[key]
    async with service.transaction() as work:
        conn = await work.connection()
        await conn.execute(_RAW_UPDATE, {"k": key, "v": v, "s": f'{{"n":{v}}}'})
        await conn.execute(insert(outbox), _outbox_row(key, v))
    versions[key] = v + 1


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


async def lateness(url: str, samples: int, *, other: bool) -> tuple[float, float]:
    """p50, p99 in ms between a timeout's due instant and its handler starting."""
    poll = {"poll_interval": 1.0}
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
            key = f"late-{other}-{i}"
            arm = Decision({"n": 0}, timeouts=[Timeout("remind", after=after)])
            await arming.processes.run(Reminder, key, lambda current, arm=arm: arm)
            await asyncio.sleep(rng.uniform(0.0, 0.05))  # arrivals spread over time
        await asyncio.wait_for(done.wait(), timeout=120)
    finally:
        await firing.dispose()
        if other:
            await arming.dispose()
    ordered = sorted(late)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


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
    print("| database | process step (state + timer + outbox) | raw two-row transaction | ratio |")
    print("|---|---|---|---|")
    for db, r in results:
        s = r["steps"]
        print(f"| {db} | {s['steps']:.0f} steps/s | {s['raw']:.0f} tx/s | **{s['ratio']:.2f}** |")
    print()
    print(f"timeout lateness (handler start - due), {args.samples} timeouts")
    print("| database | armed by | p50 | p99 |")
    print("|---|---|---|---|")
    for db, r in results:
        for path in ("this service", "another service (poll 1 s)"):
            p50, p99 = r[path]
            print(f"| {db} | {path} | {p50:.1f} ms | {p99:.1f} ms |")
    for db, r in results:
        if "dbos" in r:
            print()
            print(r["dbos"])


async def _measure(url: str, args: Any, cluster: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"steps": await steps(url, args.steps, args.rounds)}
    result["this service"] = await lateness(url, args.samples, other=False)
    result["another service (poll 1 s)"] = await lateness(url, args.samples, other=True)
    if cluster is not None and args.dbos_steps:
        from bench.processes_dbos import compare

        result["dbos"] = await compare(cluster, args.dbos_steps, args.rounds)
    return result


if __name__ == "__main__":
    main()
