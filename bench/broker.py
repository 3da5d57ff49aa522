"""Benchmark: the broker path between two deployables over NATS JetStream, against raw nats-py.

Topology: a throwaway NATS server with JetStream on file storage (tests/brokers.py), and the two
deployables of bench/broker.loom, Sender and Receiver, each its own uvicorn subprocess on its own
database (bench/_broker_apps.py). This process is only the HTTP client and the clock: each
deployable sends it one UDP datagram per ping with its timing points.

Latency, commit -> reactor start: `POST /api/workflows/ping` on Sender, one at a time (the next
only after the previous reaction committed, 10 ms later, so the relay and the consumer are idle:
latency, not queueing). Sender notes the time right after its unit of work committed the Ping with
its outbox row; Receiver notes when its reaction starts. Between the two: the relay's wake-up,
claim and publish (acked by JetStream), the consumer's fetch, the decode. Target: p50 < 5 ms,
p99 < 25 ms.

Throughput, the whole path: `--events` pings sent by `--callers` concurrent HTTP callers; from the
first request to the commit of the last reaction (its Pong and inbox row). The reference, in the
same run, alternating with it round by round: the same payloads and headers (`Nats-Msg-Id`
included) on a stream configured as the channel's (file storage, interest retention), published
with nats-py's `publish_async` (pipelined, every ack awaited), consumed by another process with
batch fetches of 64 and `ack_sync` (bench/_broker_raw.py), from the first publish to the last
confirmed ack. Target: whole path / raw >= 0.5.

The broker leg alone, one round: `--events` pings committed while Sender's relay is off
(LOOM_RELAY=off), then Sender restarted with it: from its first publish to the last reaction's
commit, no HTTP in it.

Besides: the legs of the latency (the relay's wake-up, its claim, the publish, the fetch), the CPU
time per event of every process, and at the end every reaction counted: lost (a ping with no
reaction) and doubled (applied twice). docs/benchmarks.md "Broker path (NATS)" has the figures.

    .venv/bin/python -m bench.broker                           # SQLite, 500 samples, 3 x 2000
    .venv/bin/python -m bench.broker --db postgres --events 3000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._broker_raw import WAIT, raw, raw_messages, raw_setup
from bench._serving import ROOT, Processes, Server, serving
from loom.testing import build_service
from tests.brokers import running_nats
from tests.conftest import create_pg_database
from tests.pgcluster import running_cluster

MODEL = ROOT / "bench" / "broker.loom"


@dataclass
class Notes(asyncio.DatagramProtocol):
    """The timing datagrams of the deployables (bench/_broker_apps.py): kind ("c" committed, "w"
    claim began, "k" claimed, "p" publishing, "a" publish acked, "f" fetched, "s" reaction started, "d" reaction done) -> ping
    number -> times (a list: a reaction applied twice shows twice)."""

    at: dict[str, dict[int, list[float]]] = field(
        default_factory=lambda: {kind: {} for kind in "cwkpafsd"}
    )
    waiting: dict[int, asyncio.Future[None]] = field(default_factory=dict)
    done_in: tuple[range, asyncio.Event] | None = None
    done_count: int = 0

    def datagram_received(self, data: bytes, addr: Any) -> None:
        n_text, *points = data.decode().split()
        n = int(n_text)
        for point in points:
            kind, at = point.split("=")
            self.at[kind].setdefault(n, []).append(float(at))
        if not any(point.startswith("d=") for point in points):
            return
        waiter = self.waiting.pop(n, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self.done_in is not None and n in self.done_in[0]:
            self.done_count += 1
            if self.done_count == len(self.done_in[0]):
                self.done_in[1].set()

    async def complete(self, kind: str, pings: range) -> None:
        """Until every ping has its `kind` point: a commit noted after its reaction ran (the
        relay, woken by NOTIFY, can overtake the request that committed) comes alone, later."""
        deadline = time.monotonic() + WAIT
        while any(n not in self.at[kind] for n in pings):
            if time.monotonic() > deadline:
                raise SystemExit(f"timing points {kind!r} missing")
            await asyncio.sleep(0.01)

    def first(self, kind: str, n: int) -> float:
        return self.at[kind][n][0]


async def _ping(client: httpx.AsyncClient, n: int) -> None:
    response = await client.post("/api/workflows/ping", json={"n": n})
    if response.status_code != 200:
        raise SystemExit(
            f"POST /api/workflows/ping answered {response.status_code}: {response.text}"
        )


# the legs of commit -> reactor start, from the timing notes of each ping
LEGS = {
    "commit -> reactor start": ("c", "s"),
    "commit -> publish starts (relay wake-up, claim)": ("c", "p"),
    "commit -> claim starts (the relay's wake-up)": ("c", "w"),
    "claim (one statement, its transaction)": ("w", "k"),
    "claimed -> publish starts (decode, log)": ("k", "p"),
    "publish -> JetStream's ack": ("p", "a"),
    "publish -> fetched by the consumer": ("p", "f"),
    "fetched -> reactor start (lane, decode, dispatch)": ("f", "s"),
    "reaction (its transaction, inbox row included)": ("s", "d"),
}


async def latency(
    client: httpx.AsyncClient, notes: Notes, first: int, samples: int
) -> tuple[dict[str, list[float]], int]:
    """Milliseconds of each leg (LEGS), sorted, from Sender's commit to the start of Receiver's
    reaction, one ping at a time; and how many commits were noted after their publish."""
    loop = asyncio.get_running_loop()
    for n in range(first, first + samples):
        notes.waiting[n] = done = loop.create_future()
        await _ping(client, n)
        await asyncio.wait_for(done, WAIT)
        await asyncio.sleep(0.01)
    pings = range(first, first + samples)
    await notes.complete("c", pings)
    legs = {
        leg: sorted((notes.first(b, n) - notes.first(a, n)) * 1000 for n in pings)
        for leg, (a, b) in LEGS.items()
    }
    # the request's coroutine resumed after its commit only once the relay had published
    late = sum(1 for n in pings if notes.first("c", n) > notes.first("p", n))
    return legs, late


@dataclass(frozen=True)
class Stages:
    """One whole-path round: its rate, the rate at which Sender committed the pings, when
    (seconds after the first request) the last commit, reaction start and reaction commit were,
    and the CPU milliseconds per event of each process."""

    rate: float
    commit_rate: float
    last_commit: float
    last_start: float
    last_done: float
    cpu_ms: dict[str, float]


async def _send(client: httpx.AsyncClient, pings: range, callers: int) -> None:
    """One ping request per number, `callers` of them at a time."""

    async def caller(c: int) -> None:
        for n in pings[c::callers]:
            await _ping(client, n)

    await asyncio.gather(*(caller(c) for c in range(callers)))


def _client(server: Server, callers: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=callers, max_keepalive_connections=callers)
    return httpx.AsyncClient(base_url=server.url, limits=limits, timeout=WAIT)


@dataclass(frozen=True)
class Leg:
    """The broker leg alone: events/s (Sender's first publish to the last reaction's commit),
    the relay's publishing rate (rows/s, first publish to the last ack), and the CPU
    milliseconds per event of each process from the moment the restarted Sender answered HTTP
    (its start-up is not counted; `before_ready` rows were published before that)."""

    rate: float
    relay_rate: float
    cpu_ms: dict[str, float]
    before_ready: int


async def drain(
    sender: Server,
    receiver: Server,
    nats_pid: int,
    notes: Notes,
    first: int,
    events: int,
    callers: int,
) -> Leg:
    """The broker leg alone: `events` pings committed while Sender's relay is off
    (LOOM_RELAY=off), then Sender restarted with its relay, which finds them all in the outbox."""
    pings = range(first, first + events)
    sender.stop()
    sender.env["LOOM_RELAY"] = "off"
    sender.start()
    async with _client(sender, callers) as client:
        await _send(client, pings, callers)
    notes.done_in, notes.done_count = (pings, asyncio.Event()), 0
    sender.stop()
    del sender.env["LOOM_RELAY"]
    sender.start()
    ready = time.monotonic()
    assert sender.process is not None and receiver.process is not None
    processes = Processes(sender=sender.process.pid, receiver=receiver.process.pid, nats=nats_pid)
    cpu = processes.cpu()
    await asyncio.wait_for(notes.done_in[1].wait(), WAIT)
    after = processes.cpu()
    del cpu["client"], after["client"]  # the bench process idles meanwhile
    before_ready = sum(1 for n in pings if notes.first("p", n) < ready)
    cpu_ms = Processes.per_event(cpu, after, max(events - before_ready, 1))
    start = min(notes.first("p", n) for n in pings)
    published = max(notes.first("a", n) for n in pings) - start
    rate = events / (max(notes.first("d", n) for n in pings) - start)
    return Leg(rate, events / published, cpu_ms, before_ready)


async def whole_path(
    client: httpx.AsyncClient,
    notes: Notes,
    processes: Processes,
    first: int,
    events: int,
    callers: int,
) -> Stages:
    """Events/s from the first request to the commit of the last reaction."""
    pings = range(first, first + events)
    notes.done_in, notes.done_count = (pings, asyncio.Event()), 0

    cpu = processes.cpu()
    start = time.monotonic()
    await _send(client, pings, callers)
    await asyncio.wait_for(notes.done_in[1].wait(), WAIT)
    cpu_ms = Processes.per_event(cpu, processes.cpu(), events)
    await notes.complete("c", pings)
    last = {kind: max(notes.first(kind, n) for n in pings) - start for kind in "csd"}
    return Stages(events / last["d"], events / last["c"], last["c"], last["s"], last["d"], cpu_ms)


def _percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))]


async def _pong_total(receiver: Server) -> int:
    async with httpx.AsyncClient(base_url=receiver.url, timeout=30) as client:
        response = await client.get("/api/pongs?limit=1")
        response.raise_for_status()
        return int(response.json()["total"])


async def measure(
    nats_url: str,
    nats_pid: int,
    sender: Server,
    receiver: Server,
    notes: Notes,
    args: argparse.Namespace,
) -> dict[str, Any]:
    main = build_service([MODEL])
    await raw_setup(nats_url)
    async with _client(sender, args.callers) as client:
        await latency(client, notes, 0, 50)  # warm up: connections, statement caches, the consumer
        first = 50
        legs, late = await latency(client, notes, first, args.samples)
        ms = legs["commit -> reactor start"]
        first += args.samples
        assert sender.process is not None and receiver.process is not None
        processes = Processes(
            sender=sender.process.pid, receiver=receiver.process.pid, nats=nats_pid
        )
        path_rates, raw_rates = [], []
        for _ in range(args.rounds):
            path_rates.append(
                await whole_path(client, notes, processes, first, args.events, args.callers)
            )
            first += args.events
            raw_rates.append(await raw(nats_url, nats_pid, raw_messages(main, args.events)))
    drained = await drain(
        sender, receiver, nats_pid, notes, first, args.events, args.callers
    )  # restarts Sender
    first += args.events
    await asyncio.sleep(1.0)  # a late duplicate would show now
    if args.profile:
        for server in (sender, receiver):
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as client:
                (await client.post("/bench/profile")).raise_for_status()
    applied = Counter({n: len(times) for n, times in notes.at["d"].items()})
    return {
        "p50": statistics.median(ms),
        "p99": _percentile(ms, 0.99),
        "max": ms[-1],
        "legs": legs,
        "late": late,
        "path": statistics.median(r.rate for r in path_rates),
        "raw": statistics.median(rate for rate, _ in raw_rates),
        "path_rates": path_rates,
        "raw_rates": raw_rates,
        "drain": drained,
        "sent": first,
        "lost": sum(1 for n in range(first) if n not in applied),
        "doubled": sum(1 for count in applied.values() if count > 1),
        "pongs": await _pong_total(receiver),
    }


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def databases(kind: str) -> Iterator[tuple[str, str, str]]:
    """(label, Sender's URL, Receiver's URL): two SQLite files, or two databases of a throwaway
    PostgreSQL 15 cluster."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield (
                "SQLite",
                f"sqlite+aiosqlite:///{tmp}/sender.db",
                f"sqlite+aiosqlite:///{tmp}/receiver.db",
            )
        return
    with running_cluster() as cluster:
        yield (
            "PostgreSQL 15",
            cluster.url(create_pg_database(cluster)),
            cluster.url(create_pg_database(cluster)),
        )


def run(db: str, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """One run on fresh servers: NATS, two databases, the two deployables."""
    port = _free_udp_port()
    with running_nats() as server, databases(db) as (label, sender_url, receiver_url):
        env = {
            "BENCH_NATS_URL": server.url,
            "BENCH_UDP_PORT": str(port),
            "LOOM_LOG_LEVEL": args.log_level,
            **({"BENCH_PROFILE": str(args.profile.resolve())} if args.profile else {}),
        }
        logs = server.root  # removed with the NATS server's folder

        def deployable(name: str, url: str) -> Server:
            factory = f"bench._broker_apps:{name.lower()}_app"
            env_here = {**env, "BENCH_DATABASE_URL": url}
            return Server(name, factory, ROOT, env_here, output=logs / f"{name.lower()}.log")

        receiver, sender = deployable("Receiver", receiver_url), deployable("Sender", sender_url)
        with serving(receiver, sender):
            # the server's pid: tests/brokers.py keeps its process to itself
            nats_pid = server._proc.pid  # type: ignore[union-attr]
            return label, asyncio.run(_measured(port, server.url, nats_pid, sender, receiver, args))


async def _measured(
    port: int,
    nats_url: str,
    nats_pid: int,
    sender: Server,
    receiver: Server,
    args: argparse.Namespace,
) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    transport, notes = await loop.create_datagram_endpoint(Notes, local_addr=("127.0.0.1", port))
    sock = transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    try:
        return await measure(nats_url, nats_pid, sender, receiver, notes, args)
    finally:
        transport.close()


def _cpu_text(cpu_ms: dict[str, float]) -> str:
    return " ".join(f"{name} {ms:.2f}" for name, ms in cpu_ms.items())


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def report(label: str, r: dict[str, Any], args: argparse.Namespace) -> None:
    ratio = r["path"] / r["raw"]
    print(f"## {label}: commit -> reactor start, {args.samples} pings one at a time")
    print("| p50 | p99 | max | target p50 < 5 ms | target p99 < 25 ms |")
    print("|---|---|---|---|---|")
    print(
        f"| {r['p50']:.2f} ms | {r['p99']:.2f} ms | {r['max']:.2f} ms "
        f"| {_verdict(r['p50'] < 5)} | {_verdict(r['p99'] < 25)} |"
    )
    print()
    print("| leg | p50 | p99 |")
    print("|---|---|---|")
    for leg, values in r["legs"].items():
        print(
            f"| {leg} | {statistics.median(values):.2f} ms | {_percentile(values, 0.99):.2f} ms |"
        )
    print(f"commits noted after their publish (the figure is then short): {r['late']}")
    print()
    print(
        f"## {label}: throughput, median of {args.rounds} rounds x {args.events} events "
        f"({args.callers} HTTP callers)"
    )
    print(
        "| whole path (HTTP -> outbox -> relay -> NATS -> reaction) | raw nats-py | ratio | target >= 0.5 |"
    )
    print("|---|---|---|---|")
    print(
        f"| {r['path']:.0f} events/s | {r['raw']:.0f} msgs/s | **{ratio:.2f}** "
        f"| {_verdict(ratio >= 0.5)} |"
    )
    alone: Leg = r["drain"]
    print(
        f"| broker leg alone (outbox -> relay -> NATS -> reaction), one round | "
        f"{alone.rate:.0f} events/s | | {alone.rate / r['raw']:.2f} | |"
    )
    print(
        f"broker leg alone: the relay published at {alone.relay_rate:.0f} rows/s; CPU ms/event "
        f"{_cpu_text(alone.cpu_ms)} (from Sender's restart answering; {alone.before_ready} rows "
        "published before)"
    )
    for p, (q, q_cpu) in zip(r["path_rates"], r["raw_rates"], strict=False):
        print(
            f"round: path {p.rate:.0f} events/s (Sender committed {p.commit_rate:.0f}/s; last "
            f"commit {p.last_commit:.2f} s, last reaction start {p.last_start:.2f} s, last "
            f"reaction commit {p.last_done:.2f} s; CPU ms/event {_cpu_text(p.cpu_ms)}), "
            f"raw {q:.0f} msgs/s (CPU ms/event {_cpu_text(q_cpu)})"
        )
    print(
        f"pings sent {r['sent']}, reactions lost {r['lost']}, doubled {r['doubled']}, "
        f"Pong rows {r['pongs']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.broker",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="sqlite")
    parser.add_argument("--samples", type=int, default=500, help="pings timed for latency")
    parser.add_argument("--events", type=int, default=2000, help="events per throughput round")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds per path")
    parser.add_argument("--callers", type=int, default=16, help="concurrent HTTP callers")
    parser.add_argument(
        "--log-level",
        default="INFO",
        help="LOOM_LOG_LEVEL of both deployables (INFO, the default, writes a JSON line per "
        "event fact to a log file, as a deployment does)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="a folder: profile both deployables with cProfile into sender.prof / receiver.prof "
        "(the figures are then not comparable)",
    )
    args = parser.parse_args()
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    failed = False
    for kind in kinds:
        label, result = run(kind, args)
        report(label, result, args)
        failed |= bool(result["lost"] or result["doubled"] or result["pongs"] != result["sent"])
        print()
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    if failed:
        raise SystemExit("reactions were lost or doubled")


if __name__ == "__main__":
    main()
