"""Benchmark: the transactional outbox and its relay, against the raw cost of the same rows.

Throughput: N units of work each commit one durable event (its outbox row, plus `pg_notify` on
PostgreSQL) while the relay, in the same process, claims, delivers to a no-op handler and deletes
(retention work). The figure is events/s from the first commit to the last delivery. The reference,
measured in the same run on the same engine: the same N rows inserted one transaction each, then
deleted in batches of the relay's batch size — the least any outbox must do. Target: ratio >= 0.5.

Latency, commit -> reactor start, one event at a time, 10 ms apart (the relay is idle; under a
steady stream it lingers up to `linger`, 2 ms by default, to claim rows in batches):
- in-process: a non-durable event, dispatched right after its commit;
- outbox, same service: the committing unit of work wakes its own relay;
- outbox, other service (PostgreSQL): a second Service/engine commits, and only LISTEN/NOTIFY
  wakes the relay (it polls once an hour). Target: p50 < 20 ms.

    .venv/bin/python bench/outbox.py                     # SQLite and PostgreSQL
    .venv/bin/python bench/outbox.py --db postgres --events 5000 --rounds 5 --samples 500
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import MetaData, delete, insert

from loom.runtime import Channel, DomainEvent, Service, Work, clock, new_id
from loom.runtime.messaging.outbox import outbox
from loom.runtime.values.codec import encode


@dataclass(frozen=True, kw_only=True)
class Ping(DomainEvent):
    event_type: ClassVar[str] = "Bench.Ping"
    n: int


@dataclass(frozen=True, kw_only=True)
class LocalPing(DomainEvent):
    event_type: ClassVar[str] = "Bench.LocalPing"
    n: int


CHANNELS = [Channel("bench", ["Bench.Ping"])]
COMMITTED: dict[int, float] = {}


class TimedWork(Work):
    """A transactional unit of work that notes when its commit (and relay wake-up) is done."""

    __slots__ = ("_n",)

    def __init__(self, service: Service, n: int) -> None:
        super().__init__(service, True, None)
        self._n = n

    async def _commit(self) -> None:
        await super()._commit()
        COMMITTED[self._n] = time.perf_counter()


async def _service(url: str, *, relay: bool, poll: float = 2.0) -> Service:
    service = Service.from_url(
        url, MetaData(), channels=CHANNELS, relay_options={"poll_interval": poll}
    )
    service.events.register(Ping)
    await service.create_schema()
    if relay:
        await service.start_relay()
    return service


async def throughput(url: str, events: int, rounds: int) -> dict[str, float]:
    """Median events/s of `rounds` outbox runs and `rounds` raw runs, alternating."""
    service = await _service(url, relay=True)
    delivered = 0
    done = asyncio.Event()

    async def handler(event: DomainEvent) -> None:
        nonlocal delivered
        delivered += 1
        if delivered == events:
            done.set()

    service.events.subscribe(Ping, handler, name="Bench.noop")
    outbox_rates, raw_rates = [], []
    try:
        for _ in range(rounds):
            delivered = 0
            done.clear()
            start = time.perf_counter()
            for i in range(events):
                async with service.transaction() as work:
                    work.emit(Ping(n=i))
            await asyncio.wait_for(done.wait(), timeout=600)
            outbox_rates.append(events / (time.perf_counter() - start))
            await service.settle()
            raw_rates.append(await _raw(service, events))
    finally:
        await service.dispose()
    outbox_rate, raw_rate = statistics.median(outbox_rates), statistics.median(raw_rates)
    return {"outbox": outbox_rate, "raw": raw_rate, "ratio": outbox_rate / raw_rate}


async def _raw(service: Service, events: int) -> float:
    """Rows/s: the same rows, inserted one transaction each, deleted in relay-sized batches."""
    rows = [_row(i) for i in range(events)]
    batch = service.relay.batch_size
    start = time.perf_counter()
    for row in rows:
        async with service.transaction() as work:
            await (await work.connection()).execute(insert(outbox), row)
    for i in range(0, events, batch):
        ids = [r["event_id"] for r in rows[i : i + batch]]
        async with service.transaction() as work:
            conn = await work.connection()
            await conn.execute(delete(outbox).where(outbox.c.event_id.in_(ids)))
    return events / (time.perf_counter() - start)


def _row(i: int) -> dict[str, Any]:
    now = clock.now()
    event_id = new_id()
    return {
        "event_id": event_id,
        "channel": "bench",
        "event_type": "Bench.Ping",
        "payload": encode(Ping(n=i)),
        "correlation_id": str(event_id),
        "causation_id": None,
        "occurred_at": now,
        "available_at": now,
        "attempts": 0,
        "status": "pending",
    }


async def latency(
    producer: Service, consumer: Service, samples: int, durable: bool
) -> tuple[float, float]:
    """p50, p99 in ms from a commit in `producer` to a handler starting in `consumer`."""
    started: dict[int, float] = {}
    arrived = asyncio.Event()
    event_class = Ping if durable else LocalPing

    async def handler(event: Any) -> None:
        started[event.n] = time.perf_counter()
        arrived.set()

    consumer.events.subscribe(event_class, handler, name=f"Bench.latency.{id(handler)}")
    try:
        for i in range(-20, samples):  # the first 20 warm up
            arrived.clear()
            async with TimedWork(producer, i) as work:
                work.emit(event_class(n=i))
            await asyncio.wait_for(arrived.wait(), timeout=60)
            await asyncio.sleep(0.01)  # sporadic events: the relay is idle when the next commits
    finally:
        consumer.events.unsubscribe(event_class, handler)
    ms = sorted((started[i] - COMMITTED[i]) * 1000 for i in range(samples))
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


async def measure(
    url: str, events: int, rounds: int, samples: int, postgres: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {"throughput": await throughput(url, events, rounds)}
    same = await _service(url, relay=True)
    try:
        result["in-process"] = await latency(same, same, samples, durable=False)
        result["outbox, same service"] = await latency(same, same, samples, durable=True)
    finally:
        await same.dispose()
    if postgres:
        writer = await _service(url, relay=False)
        reader = await _service(url, relay=True, poll=3600)  # only NOTIFY can wake it in time
        try:
            result["outbox, other service (NOTIFY)"] = await latency(
                writer, reader, samples, durable=True
            )
        finally:
            await writer.dispose()
            await reader.dispose()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--events", type=int, default=2000, help="events per throughput round")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds per path")
    parser.add_argument("--samples", type=int, default=300, help="events timed for latency")
    args = parser.parse_args()

    results = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            results.append(
                ("SQLite", asyncio.run(measure(url, args.events, args.rounds, args.samples, False)))
            )
    if args.db in ("postgres", "both"):
        from tests.pgcluster import running_cluster

        with running_cluster() as cluster:
            url = cluster.url()
            results.append(
                (
                    "PostgreSQL 15",
                    asyncio.run(measure(url, args.events, args.rounds, args.samples, True)),
                )
            )

    print(
        f"outbox throughput, median of {args.rounds} rounds x {args.events} events "
        "(one per transaction), end to end"
    )
    print("| database | outbox (commit + relay + delete) | raw insert + delete | ratio |")
    print("|---|---|---|---|")
    for db, r in results:
        t = r["throughput"]
        print(
            f"| {db} | {t['outbox']:.0f} events/s | {t['raw']:.0f} rows/s | **{t['ratio']:.2f}** |"
        )
    print()
    print(f"latency commit -> reactor start, {args.samples} events one at a time")
    print("| database | path | p50 | p99 |")
    print("|---|---|---|---|")
    for db, r in results:
        for path, value in r.items():
            if path != "throughput":
                p50, p99 = value
                print(f"| {db} | {path} | {p50:.2f} ms | {p99:.2f} ms |")


if __name__ == "__main__":
    main()
