"""Benchmark: the test kit's virtual clock over 34 days of an hourly context timer.

One service (hand-written, no model: just the timer tables), one context timer every hour with a
no-op handler, and `VirtualClock.advance(timedelta(days=34))`: 816 ticks, each at its own virtual
instant, each claimed and run in its own unit of work. The figure is the wall time of `advance`
(median of the rounds, each round on a fresh database); ticks/s follows. Targets: well under 1 s
on SQLite (aim <= 0.5 s), under ~1.5 s on PostgreSQL.

The second figure adds what tests/testing/test_virtual_clock.py runs among the ticks: a daily
timeout whose handler (a process step) re-arms it and arms a follow-up due at once (884 runs).

    .venv/bin/python bench/virtual_clock.py                   # SQLite and PostgreSQL
    .venv/bin/python bench/virtual_clock.py --db sqlite --rounds 5
    .venv/bin/python bench/virtual_clock.py --profile /tmp/clock   # cProfile each database's last round
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar, TypeGuard

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import MetaData

from loom.runtime import Service, Work
from loom.runtime.processes import Decision, Tick, Timeout, TimeoutDue
from loom.testing._clock import VirtualClock

logging.getLogger("loom").setLevel(logging.WARNING)
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
DAYS = 34


class Daily:
    name: ClassVar[str] = "Bench.Daily"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[dict[str, int]]:
        return isinstance(value, dict) and "sent" in value


def daily(current: dict[str, int] | None) -> Decision[dict[str, int]]:
    sent = 0 if current is None else current["sent"] + 1
    again = [Timeout("daily", after=timedelta(days=1)), Timeout("follow", after=timedelta())]
    return Decision({"sent": sent}, timeouts=again)


async def one_round(url: str, profile: cProfile.Profile | None, timeouts: bool) -> float:
    """Wall seconds of the advance."""
    service = Service.from_url(url, MetaData())
    ran = 0

    async def hourly(tick: Tick, work: Work) -> None:
        nonlocal ran
        ran += 1

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        nonlocal ran
        ran += 1
        if due.name == "daily":
            await service.processes.timeout(Daily, due, daily, work=work)

    service.recurring.register("Bench.hourly", timedelta(hours=1), hourly)
    if timeouts:
        service.timeouts.register(Daily.name, on_timeout)
    expected = DAYS * 24 + (2 * DAYS if timeouts else 0)
    try:
        with VirtualClock(service, start=START) as virtual:
            await service.create_schema()
            if timeouts:
                await service.processes.run(Daily, "d", daily)
            await virtual.run_due()
            ran = 0
            if profile is not None:
                profile.enable()
            started = time.perf_counter()
            fired = await virtual.advance(timedelta(days=DAYS))
            wall = time.perf_counter() - started
            if profile is not None:
                profile.disable()
    finally:
        await service.dispose()
    if fired != ran or ran != expected:
        raise SystemExit(f"expected {expected} runs, ran {ran} (advance answered {fired})")
    return wall


async def measure(urls: list[str], profile_to: Path | None, label: str) -> tuple[float, float]:
    """Median walls: (ticks alone, ticks and the daily timeout), alternating rounds."""
    walls: dict[bool, list[float]] = {False: [], True: []}
    for i, url in enumerate(urls):
        timeouts = i % 2 == 1
        last = i >= len(urls) - 2
        profile = cProfile.Profile() if profile_to is not None and last else None
        walls[timeouts].append(await one_round(url, profile, timeouts))
        if profile is not None and profile_to is not None:
            profile_to.mkdir(parents=True, exist_ok=True)
            profile.dump_stats(profile_to / f"{label}{'-timeouts' if timeouts else ''}.prof")
    return statistics.median(walls[False]), statistics.median(walls[True])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=Path, help="a folder: <db>.prof of the last round")
    args = parser.parse_args()

    results: list[tuple[str, tuple[float, float]]] = []
    n = 2 * args.rounds
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            urls = [f"sqlite+aiosqlite:///{tmp}/bench{i}.db" for i in range(n)]
            results.append(("SQLite", asyncio.run(measure(urls, args.profile, "sqlite"))))
    if args.db in ("postgres", "both"):
        from tests.conftest import create_pg_database
        from tests.pgcluster import running_cluster

        with running_cluster() as cluster:
            urls = [cluster.url(create_pg_database(cluster)) for _ in range(n)]
            results.append(("PostgreSQL 15", asyncio.run(measure(urls, args.profile, "postgres"))))

    ticks = DAYS * 24
    print(f"{DAYS} virtual days of an hourly timer ({ticks} ticks), median of {args.rounds} rounds")
    print(
        "| database | advance(34 days), no-op tick | ticks/s | with the daily timeout (884 runs) |"
    )
    print("|---|---|---|---|")
    for db, (alone, with_timeouts) in results:
        print(f"| {db} | **{alone:.2f} s** | {ticks / alone:.0f} | {with_timeouts:.2f} s |")


if __name__ == "__main__":
    main()
