"""What bench/broker.py measures on either side (Loom's deployables, bench/_broker_apps.py, or the
hand-written reference, bench/_broker_ref.py): the timing datagrams, the latency one ping at a
time, a whole-path round and the broker leg alone."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench._broker_raw import WAIT
from bench._load import LoadClient
from bench._serving import Processes, Server, cpu_seconds


@dataclass
class Side:
    """One side of the comparison: its two deployables, the Sender's ping route, the Receiver's
    count of Pong rows (answering `{"total": …}`) and the environment variable that, set to
    `off`, starts the Sender without its relay."""

    name: str
    sender: Server
    receiver: Server
    ping_path: str
    pongs_path: str
    relay_off: str
    #: the PostgreSQL server's postmaster (its CPU counted with its backends'), None on SQLite
    database_pid: int | None = None

    def processes(self, nats_pid: int) -> Processes:
        """The side's processes (the Sender's only while it runs)."""
        assert self.receiver.process is not None
        trees = None if self.database_pid is None else {"database": self.database_pid}
        pids = {"receiver": self.receiver.process.pid, "nats": nats_pid}
        if self.sender.process is not None:
            pids["sender"] = self.sender.process.pid
        return Processes(trees, **pids)

    async def ping(self, client: LoadClient, n: int) -> None:
        response = await client.post(self.ping_path, json={"n": n})
        if response.status_code != 200:
            raise SystemExit(
                f"{self.name}: POST {self.ping_path} answered {response.status_code}: "
                f"{response.text}"
            )

    async def pong_total(self) -> int:
        async with httpx.AsyncClient(base_url=self.receiver.url, timeout=30) as client:
            response = await client.get(self.pongs_path)
            response.raise_for_status()
            return int(response.json()["total"])


@dataclass
class Notes(asyncio.DatagramProtocol):
    """The timing datagrams of the deployables (bench/_broker_points.py): kind -> ping number ->
    times (a list: a reaction applied twice shows twice)."""

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

    async def until(self, side: Side, done: Awaitable[Any], pings: range) -> None:
        """`done`, or stop the bench saying how far the pings got on `side`."""
        try:
            await asyncio.wait_for(done, WAIT)
        except TimeoutError:
            short = {kind: sum(1 for n in pings if n not in self.at[kind]) for kind in "cpafsd"}
            raise SystemExit(
                f"{side.name}: pings {pings.start}-{pings.stop - 1} not done within {WAIT:g} s; "
                f"missing points: {short}"
            ) from None

    def expect(self, pings: range) -> asyncio.Event:
        """An event set once every ping of `pings` has its reaction's commit noted."""
        self.done_in, self.done_count = (pings, asyncio.Event()), 0
        return self.done_in[1]


# the legs of commit -> reactor start, from the timing notes of each ping
LEGS = {
    "commit -> reactor start": ("c", "s"),
    "commit -> publish starts (relay wake-up, claim)": ("c", "p"),
    "commit -> claim starts (the relay's wake-up)": ("c", "w"),
    "claim (one statement; none for a row handed over in memory)": ("w", "k"),
    "claimed -> publish starts (decode, log)": ("k", "p"),
    "publish -> JetStream's ack": ("p", "a"),
    "publish -> fetched by the consumer": ("p", "f"),
    "fetched -> reactor start (lane, decode, dispatch)": ("f", "s"),
    "reaction (its transaction, inbox row included)": ("s", "d"),
}


@dataclass(frozen=True)
class Latency:
    """Milliseconds of each leg (LEGS), sorted, and how many commits were noted after their
    publish (the request's coroutine resumed after its commit only once the relay had
    published: the figure is short for those)."""

    legs: dict[str, list[float]]
    late: int

    @property
    def ms(self) -> list[float]:
        return self.legs["commit -> reactor start"]


async def latency(side: Side, client: LoadClient, notes: Notes, pings: range) -> Latency:
    """Commit -> reactor start of each ping, one at a time: the next is sent 10 ms after the
    previous reaction committed, so the relay and the consumer are idle (latency, not
    queueing)."""
    loop = asyncio.get_running_loop()
    for n in pings:
        notes.waiting[n] = done = loop.create_future()
        await side.ping(client, n)
        await notes.until(side, done, range(n, n + 1))
        await asyncio.sleep(0.01)
    await notes.complete("c", pings)
    legs = {
        leg: sorted((notes.first(b, n) - notes.first(a, n)) * 1000 for n in pings)
        for leg, (a, b) in LEGS.items()
    }
    late = sum(1 for n in pings if notes.first("c", n) > notes.first("p", n))
    return Latency(legs, late)


def merge(parts: list[Latency]) -> Latency:
    legs = {leg: sorted(ms for part in parts for ms in part.legs[leg]) for leg in LEGS}
    return Latency(legs, sum(part.late for part in parts))


def percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[min(len(sorted_ms) - 1, int(len(sorted_ms) * q))]


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


async def send(side: Side, client: LoadClient, pings: range, callers: int) -> None:
    """One ping request per number, `callers` of them at a time."""

    async def caller(c: int) -> None:
        for n in pings[c::callers]:
            await side.ping(client, n)

    await asyncio.gather(*(caller(c) for c in range(callers)))


def http_client(server: Server, callers: int) -> LoadClient:
    """The load client of `callers` connections (bench/_load.py: as little CPU a request as a
    client can spend, on the cores the servers share)."""
    return LoadClient(server.url, callers, timeout=WAIT)


async def whole_path(side: Side, notes: Notes, nats_pid: int, pings: range, callers: int) -> Stages:
    """Events/s from the first request to the commit of the last reaction. The client is the
    round's own: a connection kept idle across the other side's round would meet uvicorn's
    keep-alive timeout (5 s), and a request sent as the server closes it fails."""
    done = notes.expect(pings)
    processes = side.processes(nats_pid)
    cpu = processes.cpu()
    start = time.monotonic()
    async with http_client(side.sender, callers) as client:
        await send(side, client, pings, callers)
    await notes.until(side, done.wait(), pings)
    cpu_ms = Processes.per_event(cpu, processes.cpu(), len(pings))
    await notes.complete("c", pings)
    last = {kind: max(notes.first(kind, n) for n in pings) - start for kind in "csd"}
    return Stages(
        len(pings) / last["d"], len(pings) / last["c"], last["c"], last["s"], last["d"], cpu_ms
    )


@dataclass(frozen=True)
class Leg:
    """The broker leg alone: events/s (Sender's first publish to the last reaction's commit),
    the relay's publishing rate (rows/s, first publish to the last ack), and the CPU
    milliseconds per event of each process: the Receiver's, NATS's and the database's over the
    whole leg, the Sender's from the moment it answered HTTP after its restart (its start-up is
    not counted), per row it published after that (`before_ready` rows were published
    before; none when that leaves less than a tenth of them)."""

    rate: float
    relay_rate: float
    cpu_ms: dict[str, float]
    before_ready: int


async def drain(side: Side, nats_pid: int, notes: Notes, pings: range, callers: int) -> Leg:
    """The broker leg alone: `pings` committed while Sender's relay is off, then Sender
    restarted with its relay, which finds them all in the outbox."""
    sender = side.sender
    sender.stop()
    sender.env[side.relay_off] = "off"
    sender.start()
    async with http_client(sender, callers) as client:
        await send(side, client, pings, callers)
    done = notes.expect(pings)
    sender.stop()
    del sender.env[side.relay_off]
    # the Receiver, NATS and the database from before the restart (idle until the first
    # publish), the Sender only from its answering (its start-up left out)
    cpu = side.processes(nats_pid).cpu()
    sender.start()
    ready = time.monotonic()
    assert sender.process is not None
    cpu["sender"] = cpu_seconds(sender.process.pid)
    await notes.until(side, done.wait(), pings)
    after = side.processes(nats_pid).cpu()
    await notes.complete("a", pings)  # the Sender's points can come after the reaction's
    before_ready = sum(1 for n in pings if notes.first("p", n) < ready)
    cpu_ms = {
        name: (after[name] - cpu[name]) * 1000 / len(pings)
        for name in cpu
        if name not in ("client", "sender")  # the bench process idles meanwhile
    }
    # the Sender's: per row it published after it answered; not measured when it published
    # nearly all of them before (its relay may start before its HTTP server answers), as a
    # clock tick over a handful of rows would read as milliseconds a row
    published_after = len(pings) - before_ready
    if published_after >= len(pings) // 10:
        cpu_ms["sender"] = (after["sender"] - cpu["sender"]) * 1000 / published_after
    start = min(notes.first("p", n) for n in pings)
    published = max(notes.first("a", n) for n in pings) - start
    rate = len(pings) / (max(notes.first("d", n) for n in pings) - start)
    return Leg(rate, len(pings) / published, cpu_ms, before_ready)


SERVERS = ("sender", "receiver", "nats", "database")


def median_cpu(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each process's median CPU ms/event over the rounds, and `server` (Sender, Receiver, NATS
    and the database server together; the client left out: it is the same for both sides)."""
    names = dict.fromkeys(name for r in rounds for name in r)  # a round may lack the Sender's
    out = {name: statistics.median(r[name] for r in rounds if name in r) for name in names}
    complete = [r for r in rounds if all(name in r for name in SERVERS)]
    if complete:
        out["server"] = statistics.median(
            sum(ms for name, ms in r.items() if name in SERVERS) for r in complete
        )
    return out
