"""What the HTTP benchmarks share: real uvicorn servers, a load client, and the server's CPU time.

Each app is served by its own `python -m uvicorn` subprocess (one worker, no access log, the same
options for both), on the same database, with the same sized connection pool (`Pool`: 15 kept,
no overflow, unless `--pool-size` / `--pool-overflow` say otherwise). The load client runs in
this process (`bench/_load.py`: lean, so the server, not the client, is what a round loads),
holding `concurrency` keep-alive connections, each driven by one task sending its requests one
after the other. A round sends a fixed number of requests; rounds alternate between the apps so a
noisy neighbour hurts both alike. Per round: requests per second (wall clock), the server's CPU
time per request (user + system time of the server process, from /proc/<pid>/stat) and the load
client's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._load import LoadClient, Response

ROOT = Path(__file__).resolve().parents[1]
BANKING = ROOT / "examples/banking/banking.loom"
_TICKS = os.sysconf("SC_CLK_TCK")
START = 10**12  # every account's opening balance: transfers of 1 never run out

# call(client, caller, n): the n-th request of caller number `caller`, answering its status
Call = Callable[[LoadClient, int, int], Awaitable[int]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A uvicorn subprocess serving `factory` ("module:function")."""

    name: str
    factory: str
    app_dir: Path
    env: dict[str, str]
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None
    #: a command the server runs under (bench/instructions.py: valgrind)
    prefix: list[str] = field(default_factory=list)
    start_timeout: float = 60
    #: a file for the server's stdout and stderr (its log lines), else the bench's own
    output: Path | None = None
    #: folders put first on the server's PYTHONPATH (bench/tracing.py: one hiding OpenTelemetry)
    first_paths: list[Path] = field(default_factory=list)
    #: a Loom app, served as `loom run` serves one (bench/_as_loom_run.py: its start frozen);
    #: else plain `python -m uvicorn`, as the hand-written references
    as_loom_run: bool = False
    #: the route polled until the server answers: it is served once the app's start is done
    probe: str = "/openapi.json"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_JWT")}
        env.update(self.env)
        paths = [*self.first_paths, ROOT / "src", ROOT]
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
        out = None if self.output is None else self.output.open("ab")
        where = ["--app-dir", str(self.app_dir), "--host", "127.0.0.1", "--port", str(self.port)]
        where += ["--log-level", "warning"]
        if self.as_loom_run:
            serve = ["bench._as_loom_run", self.factory, *where]
        else:
            serve = ["uvicorn", "--factory", self.factory, *where, "--no-access-log"]
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, "-m", *serve], env=env, stdout=out, stderr=out
        )
        if out is not None:
            out.close()  # the child holds its own descriptor
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"{self.name} server exited with {self.process.returncode}")
            try:
                httpx.get(f"{self.url}{self.probe}", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise SystemExit(f"{self.name} server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=max(30, self.start_timeout))
            self.process = None

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far."""
        assert self.process is not None
        return cpu_seconds(self.process.pid)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (its threads included)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid`, of its children that ended (which it reaped) and
    of its living children: a PostgreSQL server's, its postmaster's pid given."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    total = sum(int(f) for f in fields[11:15]) / _TICKS  # utime, stime, cutime, cstime
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            child = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        child_fields = child[child.rindex(")") + 2 :].split()
        if int(child_fields[1]) == pid:  # its parent
            total += (int(child_fields[11]) + int(child_fields[12])) / _TICKS
    return total


class Processes:
    """CPU time of the processes of a round: this one ("client"), the named others, and the named
    process trees (`trees`: a server and its children, `tree_cpu_seconds`)."""

    def __init__(self, trees: dict[str, int] | None = None, **pids: int) -> None:
        self.pids = pids
        self.trees = trees or {}

    def cpu(self) -> dict[str, float]:
        seconds = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        trees = {name: tree_cpu_seconds(pid) for name, pid in self.trees.items()}
        return {"client": time.process_time(), **seconds, **trees}

    @staticmethod
    def per_event(
        before: dict[str, float], after: dict[str, float], events: int
    ) -> dict[str, float]:
        return {name: (after[name] - before[name]) * 1000 / events for name in before}


@contextlib.contextmanager
def serving(*servers: Server) -> Iterator[None]:
    try:
        for server in servers:
            server.start()
        yield
    finally:
        for server in servers:
            server.stop()


@contextlib.contextmanager
def database(kind: str) -> Iterator[tuple[str, str]]:
    """(label, SQLAlchemy URL) of a fresh database: a SQLite file, or a throwaway PostgreSQL 15
    cluster (tests/pgcluster.py)."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield "SQLite", f"sqlite+aiosqlite:///{tmp}/bench.db"
        return
    sys.path.insert(0, str(ROOT))
    from tests.pgcluster import running_cluster

    with running_cluster() as cluster:
        yield "PostgreSQL 15", cluster.url()


@dataclass(frozen=True)
class Pool:
    """The database connection pool both apps are given: `size` connections kept open,
    `overflow` more opened under load and closed after. The default is a careful engineer's: as
    many as the load needs (16 connections' requests, one connection each at a time, less the
    one being answered), none opened and closed per request."""

    size: int = 15
    overflow: int = 0

    def env(self, prefix: str) -> dict[str, str]:
        return {
            f"{prefix}_POOL_SIZE": str(self.size),
            f"{prefix}_POOL_OVERFLOW": str(self.overflow),
        }


def generated_server(url: str, build_dir: Path, pool: Pool = Pool()) -> Server:
    """The banking example built with `loom build` into build_dir/bank, served by uvicorn as
    `loom run` serves it (its start frozen), with `pool` as `loom run --pool-size/--pool-overflow`
    give it (LOOM_POOL_SIZE, LOOM_POOL_OVERFLOW)."""
    from loom.build.package import build_model
    from loom.lang import compile_files

    result = compile_files([BANKING])
    assert result.model is not None, result.diagnostics
    build_model(result.model, build_dir / "bank")
    env = {"LOOM_DATABASE_URL": url, **pool.env("LOOM")}
    return Server("generated", "bank.main:build_app", build_dir, env, as_loom_run=True)


def reference_server(url: str, pool: Pool = Pool()) -> Server:
    env = {"BENCH_DATABASE_URL": url, **pool.env("BENCH")}
    return Server("hand-written", "bench.reference:build_app", ROOT, env)


@dataclass
class Round:
    rate: float  # requests per second
    cpu_ms: float  # server CPU milliseconds per request
    conflicts: int  # 409 answers
    client_ms: float  # the load client's CPU milliseconds per request


async def _round(server: Server, requests: int, concurrency: int, call: Call) -> Round:
    async with LoadClient(server.url, concurrency) as client:
        # open every connection before the clock starts
        await asyncio.gather(*(call(client, w, 0) for w in range(concurrency)))
        per_worker = [
            requests // concurrency + (w < requests % concurrency) for w in range(concurrency)
        ]
        conflicts = 0

        async def worker(w: int) -> None:
            nonlocal conflicts
            for n in range(1, per_worker[w] + 1):
                if await call(client, w, n) == 409:
                    conflicts += 1

        cpu, client_cpu = server.cpu_seconds(), time.process_time()
        start = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        elapsed = time.perf_counter() - start
        cpu, client_cpu = server.cpu_seconds() - cpu, time.process_time() - client_cpu
    return Round(requests / elapsed, cpu * 1000 / requests, conflicts, client_cpu * 1000 / requests)


@dataclass
class Comparison:
    generated: list[Round]
    reference: list[Round]

    @staticmethod
    def _median(rounds: list[Round], attr: str) -> float:
        return float(statistics.median(getattr(r, attr) for r in rounds))

    def row(self, label: str, concurrency: int) -> str:
        g_rate, h_rate = self._median(self.generated, "rate"), self._median(self.reference, "rate")
        g_cpu, h_cpu = (
            self._median(self.generated, "cpu_ms"),
            self._median(self.reference, "cpu_ms"),
        )
        g_409 = sum(r.conflicts for r in self.generated)
        h_409 = sum(r.conflicts for r in self.reference)
        return (
            f"| {label} | {concurrency} | {g_rate:.0f} req/s | {h_rate:.0f} req/s "
            f"| **{g_rate / h_rate:.2f}** | {g_cpu:.2f} ms | {h_cpu:.2f} ms "
            f"| **{g_cpu / h_cpu:.2f}** | {g_409} / {h_409} |"
        )

    def client_line(self, label: str, concurrency: int) -> str:
        """The load client's CPU a request, so a reader sees it was not what a round measured."""
        g, h = self._median(self.generated, "client_ms"), self._median(self.reference, "client_ms")
        return f"{label}, {concurrency}: load client CPU/request {g:.2f} ms / {h:.2f} ms"


HEADER = (
    "| database | connections | generated | hand-written | ratio | server CPU/request "
    "generated | hand-written | CPU ratio | 409 (gen / ref) |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


async def compare(
    generated: tuple[Server, Call],
    reference: tuple[Server, Call],
    *,
    requests: int,
    rounds: int,
    concurrency: int,
) -> Comparison:
    """Warm both apps up, then `rounds` alternating rounds of `requests` each."""
    result = Comparison([], [])
    for server, call in (generated, reference):
        await _round(server, min(200, requests), concurrency, call)  # warm-up
    for _ in range(rounds):
        for (server, call), out in ((generated, result.generated), (reference, result.reference)):
            out.append(await _round(server, requests, concurrency, call))
    return result


def expect(response: Response | httpx.Response, ok: int) -> int:
    """The status, or stop the benchmark on an unexpected answer (a 409 is counted)."""
    if response.status_code not in (ok, 409):
        raise SystemExit(
            f"{response.request.method} {response.request.url} -> "
            f"{response.status_code} {response.text}"
        )
    return response.status_code


@dataclass
class Accounts:
    """Account ids (as strings) of each side."""

    generated: list[str]
    reference: list[str]


async def seed(generated: Server, url: str, count: int) -> Accounts:
    """`count` accounts on each side with a large balance: through the generated service's own
    routes, and as rows of the reference's table."""
    from sqlalchemy.ext.asyncio import create_async_engine

    from bench.reference import accounts as reference_table

    gen = await seed_generated(generated, count)
    ref = [uuid.uuid4() for _ in range(count)]
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.execute(
            reference_table.insert(),
            [
                {
                    "id": i,
                    "version": 1,
                    "number": f"R-{n}",
                    "balance": START,
                    "kind": "checking",
                    "frozen": 0,
                }
                for n, i in enumerate(ref)
            ],
        )
    await engine.dispose()
    return Accounts(gen, [str(i) for i in ref])


async def seed_generated(generated: Server, count: int) -> list[str]:
    """`count` accounts of the generated service with a large balance, through its own routes."""
    gen: list[str] = []
    async with httpx.AsyncClient(base_url=generated.url) as client:
        r = await client.post("/api/workflows/register_customer", json={"name": "Bench"})
        owner = r.json()
        for n in range(count):
            r = await client.post(
                "/api/workflows/open_account", json={"owner": owner, "number": f"G-{n}"}
            )
            gen.append(r.json())
            expect(
                await client.post(f"/api/accounts/{gen[-1]}/deposit", json={"amount": START}), 204
            )
    return gen


@dataclass
class Scenario:
    """One request of each app (`Call`); caller c works on its own accounts only."""

    generated: Call
    reference: Call


def main(title: str, scenario: Callable[[Accounts], Scenario], accounts_per_caller: int) -> None:
    parser = argparse.ArgumentParser(
        description=sys.modules["__main__"].__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and app")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--connections", default="1,16", help="concurrent connections, comma-separated"
    )
    parser.add_argument(
        "--pool-size", type=int, default=Pool.size, help="connections each app keeps open"
    )
    parser.add_argument(
        "--pool-overflow",
        type=int,
        default=Pool.overflow,
        help="connections each app may open beyond them under load, closed after",
    )
    args = parser.parse_args()
    pool = Pool(args.pool_size, args.pool_overflow)
    levels = [int(c) for c in args.connections.split(",")]
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    rows, clients = [], []
    for kind in kinds:
        with database(kind) as (label, url), tempfile.TemporaryDirectory() as build:
            gen, ref = generated_server(url, Path(build), pool), reference_server(url, pool)
            with serving(gen, ref):
                accounts = asyncio.run(seed(gen, url, max(levels) * accounts_per_caller))
                calls = scenario(accounts)
                for level in levels:
                    result = asyncio.run(
                        compare(
                            (gen, calls.generated),
                            (ref, calls.reference),
                            requests=args.requests,
                            rounds=args.rounds,
                            concurrency=level,
                        )
                    )
                    rows.append(result.row(label, level))
                    clients.append(result.client_line(label, level))
                    print(rows[-1], flush=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"\n{title}, {args.rounds} rounds x {args.requests} requests, pool {pool.size} + "
        f"{pool.overflow} overflow (both apps), load average {' '.join(load)}"
    )
    print(HEADER)
    print("\n".join(rows))
    print("\n(generated's rounds / hand-written's)\n" + "\n".join(clients))
