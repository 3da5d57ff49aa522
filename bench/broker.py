"""Benchmark: the broker path between two deployables over NATS JetStream, Loom's against a
hand-written reference with the same guarantees, and raw nats-py as the physical floor.

Topology: a throwaway NATS server with JetStream on file storage (tests/brokers.py), and two
pairs of deployables, Sender and Receiver, each its own uvicorn subprocess on its own database of
one throwaway PostgreSQL cluster: Loom's, the generated service of bench/broker.loom
(bench/_broker_apps.py), and the hand-written reference (bench/_broker_ref.py: FastAPI, SQLAlchemy
Core and nats-py, no Loom): the outbox row in the request's transaction, a relay that takes rows
`FOR UPDATE SKIP LOCKED`, publishes them with their `Nats-Msg-Id` and awaits the acks, a durable
pull consumer that writes the inbox row and the Pong in one transaction and acks after the commit.
Both sides get the same connection pool (`--pool-size`, `--pool-overflow`; Loom's through
LOOM_POOL_SIZE / LOOM_POOL_OVERFLOW, what `loom run --pool-size/--pool-overflow` set) and the same
timing hooks (bench/_broker_points.py: one UDP datagram per ping and process to this process,
which is only the HTTP client and the clock).

Latency, commit -> reactor start: pings one at a time (the next only after the previous reaction
committed, 10 ms later: latency, not queueing), the two sides taking turns every 50 pings. Each
Sender notes the time right after the commit of the Ping with its outbox row; each Receiver when
its reaction starts. Target (issue 12): p50 < 5 ms, p99 < 25 ms.

Throughput, the whole path: `--events` pings sent by `--callers` concurrent HTTP callers, from the
first request to the commit of the last reaction, the sides alternating round by round, with the
raw floor after them: the same payloads and headers on a stream configured as the channel's,
published with nats-py's `publish_async` (pipelined, every ack awaited), consumed by another
process with batch fetches of 64 and `ack_sync` (bench/_broker_raw.py). The CPU time of every
process per event; "server" is Sender + Receiver + NATS + the PostgreSQL server (its postmaster
and backends: the sides take turns, so a round's database CPU is its side's).

The broker leg alone, `--rounds` rounds per side, alternating: `--events` pings committed while the
Sender's relay is off, then the Sender restarted with it: from its first publish to the last
reaction's commit, no HTTP in it.

At the end every reaction is counted: lost (a ping with no reaction) and doubled (applied twice).
docs/benchmarks.md "Broker path (NATS)" has the figures. With `--db sqlite` Loom's side runs on two
SQLite files against the physical floor only: the reference is PostgreSQL's.

    .venv/bin/python -m bench.broker                       # PostgreSQL, 300 samples, 3 x 1000: ~3 min
    .venv/bin/python -m bench.broker --db sqlite --events 2000 --logs /tmp/broker-logs
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import statistics
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._broker_raw import (
    EVENT,
    RAW_CHANNEL,
    RAW_CONSUMER,
    WAIT,
    ensure_channel,
    raw,
    raw_messages,
)
from bench._broker_timing import (
    SERVERS,
    Latency,
    Leg,
    Notes,
    Side,
    Stages,
    drain,
    http_client,
    latency,
    median_cpu,
    merge,
    percentile,
    whole_path,
)
from bench._serving import ROOT, Pool, Server, serving
from loom.model import messaging as wire
from loom.testing import build_service
from tests.brokers import running_nats
from tests.conftest import create_pg_database
from tests.pgcluster import running_cluster

MODEL = ROOT / "bench" / "broker.loom"
REF_CHANNEL, REF_CONSUMER = "Ref.Sent", "Ref.consumer"
TURN = 50  # latency pings of one side before the other's turn


@dataclass
class Outcome:
    """What one side measured."""

    latency: Latency
    rounds: list[Stages] = field(default_factory=list)
    legs: list[Leg] = field(default_factory=list)
    pings: list[range] = field(default_factory=list)  # every ping this side was sent
    pongs: int = 0
    lost: int = 0
    doubled: int = 0

    @property
    def rate(self) -> float:
        return statistics.median(r.rate for r in self.rounds)


class Numbers:
    """Ping numbers, each used once over the run (the timing notes are keyed by them)."""

    def __init__(self) -> None:
        self.next = 0

    def take(self, count: int) -> range:
        taken = range(self.next, self.next + count)
        self.next += count
        return taken


async def measure(
    nats_url: str, nats_pid: int, sides: list[Side], notes: Notes, args: argparse.Namespace
) -> tuple[dict[str, Outcome], list[tuple[float, dict[str, float]]]]:
    numbers = Numbers()
    await ensure_channel(nats_url, RAW_CHANNEL, RAW_CONSUMER)
    main = build_service([MODEL])
    raws: list[tuple[float, dict[str, float]]] = []
    async with contextlib.AsyncExitStack() as stack:
        clients = {
            s.name: await stack.enter_async_context(http_client(s.sender, args.callers))
            for s in sides
        }
        parts: dict[str, list[Latency]] = {s.name: [] for s in sides}
        sent: dict[str, list[range]] = {s.name: [] for s in sides}
        for turn in range(-TURN, args.samples, TURN):  # the first: warm-up, not counted
            for side in sides:
                pings = numbers.take(TURN)
                sent[side.name].append(pings)
                timed = await latency(side, clients[side.name], notes, pings)
                if turn >= 0:
                    parts[side.name].append(timed)
    out = {s.name: Outcome(merge(parts[s.name]), pings=sent[s.name]) for s in sides}
    for _ in range(args.rounds):
        for side in sides:
            pings = numbers.take(args.events)
            out[side.name].pings.append(pings)
            stages = await whole_path(side, notes, nats_pid, pings, args.callers)
            out[side.name].rounds.append(stages)
        # new ids each round: JetStream would drop a repeated Nats-Msg-Id as a duplicate
        raws.append(await raw(nats_url, nats_pid, raw_messages(main, args.events)))
    for _ in range(args.rounds):
        for side in sides:  # restarts the Sender twice
            pings = numbers.take(args.events)
            out[side.name].pings.append(pings)
            out[side.name].legs.append(await drain(side, nats_pid, notes, pings, args.callers))
    await asyncio.sleep(1.0)  # a late duplicate would show now
    if args.profile:
        for server in (sides[0].sender, sides[0].receiver):
            async with httpx.AsyncClient(base_url=server.url, timeout=WAIT) as client:
                (await client.post("/bench/profile")).raise_for_status()
    for side in sides:
        out[side.name].pongs = await side.pong_total()
    return out, raws


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def databases(kind: str, count: int) -> Iterator[tuple[str, list[str], int | None]]:
    """(label, URLs, the server's pid): `count` SQLite files (no server), or databases of a
    throwaway PostgreSQL 15 cluster (its postmaster's pid)."""
    if kind == "sqlite":
        with tempfile.TemporaryDirectory() as tmp:
            yield "SQLite", [f"sqlite+aiosqlite:///{tmp}/db{i}.db" for i in range(count)], None
        return
    with running_cluster() as cluster:
        urls = [cluster.url(create_pg_database(cluster)) for _ in range(count)]
        postmaster = (cluster.root / "data" / "postmaster.pid").read_text().split()[0]
        yield "PostgreSQL 15", urls, int(postmaster)


def run(
    db: str, args: argparse.Namespace
) -> tuple[str, dict[str, Outcome], list[tuple[float, dict[str, float]]]]:
    """One run on fresh servers: NATS, the databases, each side's two deployables."""
    port = _free_udp_port()
    reference = db == "postgres"
    with (
        contextlib.ExitStack() as stack,
        running_nats() as server,
        databases(db, 4 if reference else 2) as (label, urls, db_pid),
    ):
        common = {
            "BENCH_NATS_URL": server.url,
            "BENCH_UDP_PORT": str(port),
            "LOOM_LOG_LEVEL": args.log_level,
        }
        sink = Server("sink", "bench._otlp_sink:build_app", ROOT, {}) if args.trace else None
        if sink is not None:
            sink.start()
            stack.callback(sink.stop)
        logs = args.logs or server.root  # by default removed with the NATS server's folder
        logs.mkdir(parents=True, exist_ok=True)
        pool = Pool(args.pool_size, args.pool_overflow)

        def loom(name: str, url: str) -> Server:
            env = {**common, "BENCH_DATABASE_URL": url, **pool.env("LOOM")}
            if sink is not None:  # every request and event traced, exported to the sink
                env["LOOM_OTEL_ENDPOINT"] = sink.url
                env["OTEL_TRACES_SAMPLER"] = "always_on"
            if args.profile:
                args.profile.mkdir(parents=True, exist_ok=True)
                env["BENCH_PROFILE"] = str(args.profile.resolve())
            factory = f"bench._broker_apps:{name.lower()}_app"
            out = logs / f"{name.lower()}.log"
            # ready once it answers its liveness route (as an orchestrator probes it): a first
            # /openapi.json would build the model's schema on the event loop while the relay
            # publishes, in the leg (about 0.1 s of CPU for this model)
            return Server(name, factory, ROOT, env, output=out, as_loom_run=True, probe="/healthz")

        def hand(name: str, url: str) -> Server:
            env = {**common, "BENCH_DATABASE_URL": url, **pool.env("BENCH")}
            env["BENCH_STREAM"] = wire.stream_name(REF_CHANNEL)
            env["BENCH_SUBJECT"] = wire.event_subject(REF_CHANNEL, EVENT)
            env["BENCH_DURABLE"] = wire.jetstream_durable(REF_CONSUMER)
            factory = f"bench._broker_ref:{name.lower()}_app"
            return Server(f"reference {name}", factory, ROOT, env, output=logs / f"ref-{name}.log")

        sides = [
            Side(
                "Loom",
                loom("Sender", urls[0]),
                loom("Receiver", urls[1]),
                "/api/workflows/ping",
                "/api/pongs?limit=1",
                "LOOM_RELAY",
                db_pid,
            )
        ]
        if reference:
            asyncio.run(ensure_channel(server.url, REF_CHANNEL, REF_CONSUMER))
            sides.append(
                Side(
                    "hand-written",
                    hand("Sender", urls[2]),
                    hand("Receiver", urls[3]),
                    "/ping",
                    "/pongs",
                    "BENCH_RELAY",
                    db_pid,
                )
            )
        servers = [server for side in sides for server in (side.receiver, side.sender)]
        with serving(*servers):
            # the server's pid: tests/brokers.py keeps its process to itself
            nats_pid = server._proc.pid  # type: ignore[union-attr]
            out, raws = asyncio.run(_measured(port, server.url, nats_pid, sides, args))
            return label, out, raws


async def _measured(
    port: int, nats_url: str, nats_pid: int, sides: list[Side], args: argparse.Namespace
) -> tuple[dict[str, Outcome], list[tuple[float, dict[str, float]]]]:
    loop = asyncio.get_running_loop()
    transport, notes = await loop.create_datagram_endpoint(Notes, local_addr=("127.0.0.1", port))
    sock = transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    try:
        out, raws = await measure(nats_url, nats_pid, sides, notes, args)
    finally:
        transport.close()
    applied = Counter({n: len(times) for n, times in notes.at["d"].items()})
    for outcome in out.values():
        sent = [n for pings in outcome.pings for n in pings]
        outcome.lost = sum(1 for n in sent if n not in applied)
        outcome.doubled = sum(1 for n in sent if applied[n] > 1)
    return out, raws


def _figures(o: Outcome) -> dict[str, tuple[float, str, int]]:
    """What the comparison table shows of one side: figure -> (value, unit, decimals)."""
    cpu = median_cpu([r.cpu_ms for r in o.rounds])
    leg_cpu = median_cpu([leg.cpu_ms for leg in o.legs])
    return {
        "commit -> reactor start, p50": (percentile(o.latency.ms, 0.5), "ms", 2),
        "commit -> reactor start, p99": (percentile(o.latency.ms, 0.99), "ms", 2),
        "whole path": (o.rate, "events/s", 0),
        **{
            f"whole path, CPU ms/event: {n}": (cpu[n], "ms", 2)
            for n in ("server", *SERVERS)
            if n in cpu
        },
        "broker leg alone": (statistics.median(leg.rate for leg in o.legs), "events/s", 0),
        "broker leg: the relay's publishing": (
            statistics.median(leg.relay_rate for leg in o.legs),
            "rows/s",
            0,
        ),
        **{
            f"broker leg, CPU ms/event: {n}": (leg_cpu[n], "ms", 2)
            for n in ("server", *SERVERS)
            if n in leg_cpu
        },
    }


def _cpu_text(cpu_ms: dict[str, float]) -> str:
    return " ".join(f"{name} {ms:.2f}" for name, ms in cpu_ms.items())


def report(
    label: str,
    out: dict[str, Outcome],
    raws: list[tuple[float, dict[str, float]]],
    args: argparse.Namespace,
) -> None:
    loom, ref = out["Loom"], out.get("hand-written")
    against = "the physical floor only" if ref is None else "the hand-written reference"
    print(
        f"## {label}: Loom against {against} (pool size {args.pool_size}, overflow "
        f"{args.pool_overflow})"
    )
    print(
        f"latency: {args.samples} pings one at a time each; whole path and broker leg: medians "
        f"of {args.rounds} rounds x {args.events} events ({args.callers} HTTP callers); "
        "CPU: server = Sender + Receiver + NATS + database"
    )
    print("| figure | Loom | hand-written | Loom / hand-written |")
    print("|---|---|---|---|")
    theirs = None if ref is None else _figures(ref)
    for what, (value, unit, digits) in _figures(loom).items():
        if theirs is None:
            print(f"| {what} | {value:.{digits}f} {unit} | | |")
            continue
        if what not in theirs:  # not measured on their side (the Sender's, in some legs)
            print(f"| {what} | {value:.{digits}f} {unit} | n/a | |")
            continue
        other = theirs[what][0]
        # CPU times are read in clock ticks (10 ms): a short run can count none
        ratio = f"**{value / other:.2f}**" if other else "n/a (too short to count)"
        print(f"| {what} | {value:.{digits}f} {unit} | {other:.{digits}f} {unit} | {ratio} |")
    floor = statistics.median(rate for rate, _ in raws)
    print(
        f"\nphysical floor, raw nats-py (no HTTP, database, outbox or inbox): {floor:.0f} msgs/s, "
        f"CPU ms/msg {_cpu_text(median_cpu_raw(raws))}; whole path / floor: Loom "
        f"{loom.rate / floor:.3f}"
        + ("" if ref is None else f", hand-written {ref.rate / floor:.3f}")
    )
    for name, side in out.items():
        print(f"\n{name}: the legs of commit -> reactor start (p50 / p99)")
        print("| leg | p50 | p99 |")
        print("|---|---|---|")
        for leg, values in side.latency.legs.items():
            p50, p99 = statistics.median(values), percentile(values, 0.99)
            print(f"| {leg} | {p50:.2f} ms | {p99:.2f} ms |")
        print(f"commits noted after their publish (the figure is then short): {side.latency.late}")
        for r in side.rounds:
            print(
                f"round: {r.rate:.0f} events/s (Sender committed {r.commit_rate:.0f}/s; last "
                f"commit {r.last_commit:.2f} s, last reaction start {r.last_start:.2f} s, last "
                f"reaction commit {r.last_done:.2f} s; CPU ms/event {_cpu_text(r.cpu_ms)})"
            )
        for drained in side.legs:
            print(
                f"broker leg: {drained.rate:.0f} events/s, the relay {drained.relay_rate:.0f} rows/s; CPU "
                f"ms/event {_cpu_text(drained.cpu_ms)} (the Sender's from its answering after the "
                f"restart, per row published after; {drained.before_ready} published before)"
            )
        sent = sum(len(p) for p in side.pings)
        print(
            f"pings sent {sent}, reactions lost {side.lost}, doubled {side.doubled}, "
            f"Pong rows {side.pongs}"
        )


def median_cpu_raw(raws: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    return {name: statistics.median(r[name] for _, r in raws) for name in raws[0][1]}


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.broker",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--db", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument(
        "--samples", type=int, default=300, help="pings timed for latency, per side"
    )
    parser.add_argument("--events", type=int, default=1000, help="events per throughput round")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds per side")
    parser.add_argument("--callers", type=int, default=16, help="concurrent HTTP callers")
    parser.add_argument(
        "--pool-size",
        type=int,
        default=Pool.size,
        help="connections each deployable keeps (both sides)",
    )
    parser.add_argument(
        "--pool-overflow",
        type=int,
        default=Pool.overflow,
        help="connections a deployable may open beyond them, closed after (both sides)",
    )
    parser.add_argument(
        "--log-level",
        default="INFO",
        help="LOOM_LOG_LEVEL of Loom's deployables (INFO, the default, writes a JSON line per "
        "event fact to a log file, as a deployment does)",
    )
    parser.add_argument(
        "--logs", type=Path, help="a folder to keep the deployables' logs in (default: removed)"
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="trace Loom's deployables, every request and event, exporting over OTLP/HTTP to a "
        "local sink (bench/_otlp_sink.py): its cost is the Loom/reference ratios of a run with it "
        "against a run without (docs/benchmarks.md#traces)",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        help="a folder: profile Loom's deployables with cProfile into sender.prof / receiver.prof "
        "(the figures are then not comparable)",
    )
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    label, out, raws = run(args.db, args)
    report(label, out, raws, args)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if any(o.lost or o.doubled or o.pongs != sum(len(p) for p in o.pings) for o in out.values()):
        raise SystemExit("reactions were lost or doubled")


if __name__ == "__main__":
    main()
