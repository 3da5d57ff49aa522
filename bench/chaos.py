"""Benchmark: the chaos scenarios of tests/chaos, larger — more kills, more restarts, more requests,
every token of the bad-input corpus on every example. The scenario code is the suite's own
(tests/chaos/*.py); only the plans differ. docs/chaos.md records the figures of a long run.

    .venv/bin/python bench/chaos.py                          # everything, SQLite and PostgreSQL
    .venv/bin/python bench/chaos.py --db postgres --only kill restart --kills 20
    .venv/bin/python bench/chaos.py --only contention --requests 1000 --clients 100

Every figure is printed; the run ends with the broken promises it found (none, on a healthy
build) and exits 1 if there were any.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.chaos.bad_input import bad_input, examples
from tests.chaos.contention import ContentionPlan, contention
from tests.chaos.kill_replicas import KillPlan, kill_replicas
from tests.chaos.pg_restart import ALLOWED, RestartPlan, pg_restart
from tests.chaos.servers import (
    CHAOS_MODEL,
    CrashableCluster,
    Server,
    copy_model,
    new_pg_database,
    serving,
)
from tests.pgcluster import running_cluster

SCENARIOS = ("kill", "restart", "contention", "bad-input")
_names = itertools.count()


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def show(lines: list[str]) -> None:
    print("\n".join(lines), flush=True)


class Databases:
    """A fresh database per scenario: a SQLite file, or a database in the bench's own cluster."""

    def __init__(self, workdir: Path, cluster: CrashableCluster | None) -> None:
        self.workdir = workdir
        self.cluster = cluster

    async def url(self, engine: str) -> str:
        n = next(_names)
        if engine == "sqlite":
            return f"sqlite+aiosqlite:///{self.workdir / f'chaos{n}.db'}"
        assert self.cluster is not None
        return await new_pg_database(self.cluster.cluster, f"chaos_bench_{n}")


@contextlib.contextmanager
def maybe_cluster(needed: bool) -> Iterator[CrashableCluster | None]:
    if not needed:
        yield None
        return
    with running_cluster() as cluster:
        yield CrashableCluster(cluster)


async def run(args: argparse.Namespace, dbs: Databases) -> list[str]:
    problems: list[str] = []
    engines = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    for engine in engines:
        if "kill" in args.only:
            plan = KillPlan(kills=args.kills, interval=args.interval, clients=args.kill_clients)
            work = Path(tempfile.mkdtemp(dir=dbs.workdir))
            audit = await kill_replicas(work, await dbs.url(engine), plan)
            show(audit.lines(f"kill -9 of replicas ({engine})"))
            problems += [f"kill ({engine}): {p}" for p in audit.problems()]
            problems += [f"kill ({engine}): {s}" for s in audit.ledger.labels if s[:1] == "5"]
        if "contention" in args.only:
            cplan = ContentionPlan(requests=args.requests, clients=args.clients)
            work = Path(tempfile.mkdtemp(dir=dbs.workdir))
            url = await dbs.url(engine)
            server = Server(copy_model(work / "model", [CHAOS_MODEL]), url, log_dir=work)
            with serving(server):
                server.start()
                await server.wait_ready()
                result = await contention(server.base, url, cplan)
            show(result.lines(cplan))
            problems += [f"contention ({engine}): {p}" for p in result.problems()]
        if "bad-input" in args.only:
            for example in examples(args.examples):
                work = Path(tempfile.mkdtemp(dir=dbs.workdir))
                findings = await bad_input(
                    work, example, await dbs.url(engine), every_token=True, deadline=1800
                )
                show(findings.lines())
                problems += [
                    f"bad input ({example.name}, {engine}): {s} {route} [{name}]"
                    for route, name, s in findings.server_errors
                ]
    if "restart" in args.only and "postgres" in engines:
        assert dbs.cluster is not None
        rplan = RestartPlan(restarts=args.restarts, interval=args.interval)
        work = Path(tempfile.mkdtemp(dir=dbs.workdir))
        audit, recoveries = await pg_restart(work, dbs.cluster, rplan, "chaos_bench_restart")
        show(audit.lines("pg_ctl restart -m immediate under load (postgres)"))
        problems += [f"restart: {p}" for p in audit.problems()]
        problems += [f"restart: answer {s}" for s in audit.ledger.labels if s not in ALLOWED]
        if None in recoveries:
            problems.append("restart: the service did not answer again")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--only", nargs="+", choices=SCENARIOS, default=list(SCENARIOS))
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--kill-clients", type=int, default=16)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--examples",
        nargs="+",
        default=["support", "shop", "banking", "sales", "scheduling"],
    )
    args = parser.parse_args()
    print(f"chaos bench, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; uptime: {uptime()}", flush=True)
    started = time.monotonic()
    # kept when the run fails, so the servers' logs can be read afterwards
    tmp = tempfile.mkdtemp(prefix="loom-chaos-bench-")
    needs_pg = args.db != "sqlite"
    with maybe_cluster(needs_pg) as cluster:
        try:
            problems = asyncio.run(run(args, Databases(Path(tmp), cluster)))
        except BaseException:
            print(f"the run failed; its servers' logs are under {tmp}", flush=True)
            raise
    print(f"\n{time.monotonic() - started:.0f}s in all; uptime at the end: {uptime()}")
    print(f"broken promises: {len(problems)}")
    for p in problems:
        print(f"  {p}")
    if problems:
        print(f"the servers' logs are under {tmp}")
        sys.exit(1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
