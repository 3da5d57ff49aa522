"""Benchmark: CPU instructions per event of the broker consumer, Loom's Receiver of bench/broker.py
against the hand-written reference's (bench/_broker_ref.py), which does the same work.

Time-based figures of the consumer's CPU move with the machine's load; the instructions a process
executes per event do not. Each side's Receiver runs alone in a process of its own (its app's
lifespan, no HTTP server) under valgrind's callgrind, on a fresh database of a throwaway
PostgreSQL cluster and a throwaway NATS server. This process publishes messages exactly as each
side's Sender publishes them in bench/broker.py (Loom's payloads and headers, each ping its key's
first event; the reference's JSON and its one header) to the Receiver's stream: `--warm` of them
first, applied before the counters are zeroed (`callgrind_control -z`), then `--events`, and the
counters are read (`callgrind_control -d`) once every Pong row is committed:

    instructions/event = instructions between the zeroing and the dump / events

What it does not see: time spent waiting, in the kernel, or lost to cache misses; `--measure
misses` counts the misses of a simulated second-level cache of `--l2` KiB per event instead
(bench/instructions.py's `cache_sim`: the memory an event touches beyond what stays close to the
core). `--measure calls`
counts Python function calls (cProfile) the same way instead, quicker, and `--measure cpu` the
Receivers' CPU time (no valgrind; both alive, taking turns for `--rounds` of `--events`, since
the machine's speed moves), `--measure syscalls` its system calls
(strace, attached for the counted events; the table is printed); `--keep DIR` keeps the profiles
(callgrind's for `callgrind_annotate`, cProfile's for `python -m pstats`). With `--measure calls`
and BENCH_OPCODES=<file>, each child counts the bytecodes each Python function executes instead,
into <file>.loom and <file>.reference: which Python code runs how much, whatever C it calls (the
figure printed is then bytecodes per event).

    .venv/bin/python -m bench.consumer_instructions                        # ~3 min
    .venv/bin/python -m bench.consumer_instructions --measure misses       # ~5 min
    .venv/bin/python -m bench.consumer_instructions --measure calls --keep /tmp/consumer
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

SIDES = ("loom", "reference")
REF_CHANNEL, REF_CONSUMER = "Ref.Sent", "Ref.consumer"  # bench/broker.py's
CHANNELS = {"loom": "Sender.Sent", "reference": REF_CHANNEL}  # each side's Receiver reads
WAIT = 600.0  # seconds: the longest one wait may take (valgrind is slow)
_TOTALS = re.compile(r"^(?:summary|totals):\s+(\d+)", re.M)
_EVENTS = re.compile(r"^events:(.*)$", re.M)
_SUMMARY = re.compile(r"^(?:summary|totals):(.*)$", re.M)
_CALLS = re.compile(r"^calls (\d+)$", re.M)
_SYSCALLS = re.compile(r"^[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?total$", re.M)


def child(side: str, profile: str | None) -> None:
    """The Receiver of `side` in this process: 'ready' once its lifespan started; then, with
    `profile` (a file, or "" for none), its Python calls are counted from a `start` line on
    standard input to a `stop` line (printed as `calls N`); it stops at `stop`."""
    import cProfile
    import pstats

    if side == "loom":  # made as `loom run` makes what it serves (its start frozen)
        from bench._broker_apps import receiver_app
        from loom.cli.serve import made_to_serve

        app = made_to_serve(receiver_app)
    else:
        from bench._broker_ref import receiver_app

        app = receiver_app()

    async def run() -> None:
        loop = asyncio.get_running_loop()
        async with app.router.lifespan_context(app):
            print("ready", flush=True)
            profiler = cProfile.Profile()
            opcodes = os.environ.get("BENCH_OPCODES")  # a file: count bytecodes instead
            counts: dict[Any, int] = {}
            while (line := await loop.run_in_executor(None, sys.stdin.readline)).strip() != "stop":
                if profile is not None and line.strip() == "start":
                    if opcodes:
                        _count_opcodes(counts)
                    else:
                        profiler.enable()
            if opcodes:
                sys.settrace(None)
                # the figure is then bytecodes, not calls
                print(f"calls {_dump_opcodes(counts, f'{opcodes}.{side}')}", flush=True)
            elif profile is not None:
                profiler.disable()
                stats = pstats.Stats(profiler)
                print(f"calls {stats.total_calls}", flush=True)  # type: ignore[attr-defined]
                if profile:
                    stats.dump_stats(profile)

    asyncio.run(run())


def _count_opcodes(counts: dict[Any, int]) -> None:
    """From now on, in this thread, the bytecodes executed per code object (a diagnosis aid:
    which Python code runs how much; slow)."""

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            counts[code] = counts.get(code, 0) + 1
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        return local

    sys.settrace(tracer)


def _dump_opcodes(counts: dict[Any, int], path: str) -> int:
    """`counts` into `path`, the busiest code first; returns their total."""
    lines = (
        f"{n}\t{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}\n"
        for code, n in sorted(counts.items(), key=lambda item: -item[1])
    )
    Path(path).write_text("".join(lines))
    return sum(counts.values())


async def _publish(url: str, side: str, count: int) -> None:
    """`count` pings to `side`'s Receiver, as its Sender's relay publishes them: Loom's with
    Loom's payload and headers (bench/_broker_raw.py), the reference's with its JSON and its one
    `Nats-Msg-Id` header (bench/_broker_ref.py)."""
    import nats

    from bench._broker_raw import raw_messages

    messages = raw_messages(_broker_service(), count, CHANNELS[side])
    if side == "reference":
        messages = [
            (subject, _ref_payload(payload), {"Nats-Msg-Id": headers["Nats-Msg-Id"]})
            for subject, payload, headers in messages
        ]
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        acks = [
            await js.publish_async(subject, payload, headers=headers)
            for subject, payload, headers in messages
        ]
        await asyncio.wait_for(asyncio.gather(*acks), WAIT)
    finally:
        await nc.close()


@functools.cache
def _broker_service() -> Any:
    """bench/broker.loom built once (every round publishes; the model does not change)."""
    from loom.testing import build_service

    return build_service([ROOT / "bench" / "broker.loom"])


def _ref_payload(loom_payload: bytes) -> bytes:
    """The reference Sender's JSON of the ping whose Loom payload is `loom_payload`."""
    event = json.loads(loom_payload)
    return json.dumps({"ping": event["ping"], "n": event["n"]}).encode()


async def _pongs(url: str) -> int:
    """Pong rows committed so far (Loom's table or the reference's, whichever exists)."""
    import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        table = await conn.fetchval(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE '%pongs'"
        )
        return 0 if table is None else int(await conn.fetchval(f'SELECT count(*) FROM "{table}"'))
    finally:
        await conn.close()


def _applied(url: str, count: int) -> None:
    """Until `count` Pong rows are committed (polled from this process, not the Receiver's)."""
    deadline = time.monotonic() + WAIT
    while asyncio.run(_pongs(url)) < count:
        if time.monotonic() > deadline:
            raise SystemExit("the receiver applied too few messages")
        time.sleep(0.2)


def _tell(stdin: IO[bytes], line: str) -> None:
    stdin.write(f"{line}\n".encode())
    stdin.flush()


def _environment(url: str, nats_url: str, log_level: str) -> dict[str, str]:
    from loom.model import messaging as wire

    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
        "BENCH_DATABASE_URL": url,
        "BENCH_NATS_URL": nats_url,
        "BENCH_UDP_PORT": "9",  # the timing points' datagrams go nowhere (discard)
        # the same fixed pool on both sides, as bench/broker.py gives them
        **{f"{p}_POOL_{k}": v for p in ("LOOM", "BENCH") for k, v in (("SIZE", "15"),)},
        **{f"{p}_POOL_OVERFLOW": "0" for p in ("LOOM", "BENCH")},
        "BENCH_STREAM": wire.stream_name(REF_CHANNEL),
        "BENCH_DURABLE": wire.jetstream_durable(REF_CONSUMER),
        "LOOM_LOG_LEVEL": log_level,
    }


def _strace(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """strace counting the system calls of `pid`'s threads until it gets SIGINT."""
    tracer = subprocess.Popen(
        ["strace", "-f", "-c", "-o", str(out), "-p", str(pid)], stderr=subprocess.PIPE
    )
    assert tracer.stderr is not None
    tracer.stderr.readline()  # "strace: Process N attached": counting from here
    return tracer


def _start_receiver(
    command: list[str], side: str, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """`side`'s Receiver started by `command`, once it says it is ready (its errors to `log`)."""
    with log.open("wb") as errors:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors
        )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        proc.kill()
        proc.wait()
        raise SystemExit(f"the {side} receiver did not start (see {log})")
    return proc


def _callgrind(command: str, pid: int) -> None:
    subprocess.run(["callgrind_control", command, str(pid)], check=True, capture_output=True)


def one(side: str, url: str, nats_url: str, args: argparse.Namespace) -> float:
    """Instructions (second-level misses, calls, system calls) per event of `side`'s Receiver."""
    from bench._broker_raw import ensure_channel
    from bench.instructions import L2_KIB, cache_sim

    events: int = args.events

    if side == "reference":
        asyncio.run(ensure_channel(nats_url, REF_CHANNEL, REF_CONSUMER))
    with tempfile.TemporaryDirectory() as tmp:
        keep = Path(tmp) if args.keep is None else args.keep
        keep.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "bench.consumer_instructions", "--child", side]
        profile = keep / f"callgrind.{side}"
        if args.measure == "calls":
            command += ["--profile", str(keep / f"{side}.prof")]
        elif args.measure in ("instructions", "misses"):
            for old in keep.glob(f"callgrind.{side}*"):
                old.unlink()
            tool = ["--tool=callgrind", f"--callgrind-out-file={profile}"]
            if args.measure == "misses":
                tool += cache_sim(args.l2 or L2_KIB)
            command = ["valgrind", *tool, f"--log-file={tmp}/valgrind.log", *command]
        env = _environment(url, nats_url, args.log_level)
        proc = _start_receiver(command, side, env, Path(tmp) / "log")
        assert proc.stdin is not None and proc.stdout is not None
        try:
            asyncio.run(_publish(nats_url, side, args.warm))
            _applied(url, args.warm)
            tracer = None
            if args.measure == "calls":
                _tell(proc.stdin, "start")
            elif args.measure == "syscalls":
                tracer = _strace(proc.pid, keep / f"strace.{side}")
            elif args.measure in ("instructions", "misses"):
                _callgrind("-z", proc.pid)
            asyncio.run(_publish(nats_url, side, args.events))
            _applied(url, args.warm + args.events)
            if tracer is not None:
                tracer.send_signal(signal.SIGINT)
                tracer.wait(WAIT)
            if args.measure in ("instructions", "misses"):
                _callgrind("-d", proc.pid)
            _tell(proc.stdin, "stop")
            printed = proc.stdout.read().decode()
            proc.wait(WAIT)
        finally:
            if proc.returncode is None:
                proc.kill()
                proc.wait()
        if args.measure == "syscalls":
            table = (keep / f"strace.{side}").read_text()
            print(table)
            found = _SYSCALLS.search(table)
            assert found is not None, table
            return int(found.group(1)) / events
        if args.measure == "calls":
            found = _CALLS.search(printed)
            assert found is not None, printed
            return int(found.group(1)) / events
        dumps = sorted(keep.glob(f"callgrind.{side}.*"))  # the dump asked for: `<file>.1`
        dump = dumps[0].read_text()
        if args.measure == "misses":
            misses = second_level_misses(dump)
            print(f"{side}: {misses[1] / events:,.0f} instructions/event", flush=True)
            return misses[0] / events
        found = _TOTALS.search(dump)
        assert found is not None
        return int(found.group(1)) / events


def second_level_misses(dump: str) -> tuple[int, int]:
    """The misses of the simulated second-level cache (instruction reads, data reads and data
    writes) and the instructions, from a callgrind dump made with `cache_sim`."""
    names, totals = _EVENTS.search(dump), _SUMMARY.search(dump)
    assert names is not None and totals is not None, "no cache events in the dump"
    counts = dict(zip(names.group(1).split(), map(int, totals.group(1).split()), strict=True))
    return counts["ILmr"] + counts["DLmr"] + counts["DLmw"], counts["Ir"]


def cpu_rounds(urls: list[str], nats_url: str, args: argparse.Namespace) -> None:
    """`--measure cpu`: both Receivers alive at once, taking turns round by round (`--rounds` of
    `--events` each, the first side alternating), so that the machine's speed, which moves by
    tens of percent over minutes on a shared host, weighs on both alike; per round each side's
    CPU time per event, their ratio, and the median of the rounds' ratios."""
    from bench._broker_raw import ensure_channel
    from bench._serving import cpu_seconds

    asyncio.run(ensure_channel(nats_url, REF_CHANNEL, REF_CONSUMER))
    url_of = dict(zip(SIDES, urls, strict=True))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    applied = dict.fromkeys(SIDES, 0)
    ratios: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for side, url in url_of.items():
                command = [sys.executable, "-m", "bench.consumer_instructions", "--child", side]
                env = _environment(url, nats_url, args.log_level)
                procs[side] = _start_receiver(command, side, env, Path(tmp) / f"{side}.log")
            for side, url in url_of.items():
                asyncio.run(_publish(nats_url, side, args.warm))
                applied[side] += args.warm
                _applied(url, applied[side])
            for round_ in range(args.rounds):
                per: dict[str, float] = {}
                order = SIDES if round_ % 2 == 0 else SIDES[::-1]
                for side in order:
                    before = cpu_seconds(procs[side].pid)
                    asyncio.run(_publish(nats_url, side, args.events))
                    applied[side] += args.events
                    _applied(url_of[side], applied[side])
                    per[side] = (cpu_seconds(procs[side].pid) - before) * 1e6 / args.events
                ratios.append(per["loom"] / per["reference"])
                print(
                    f"round {round_ + 1}: loom {per['loom']:,.0f} µs/event, reference "
                    f"{per['reference']:,.0f} µs/event, Loom / reference {ratios[-1]:.2f}",
                    flush=True,
                )
        finally:
            for proc in procs.values():
                if proc.stdin is not None:
                    _tell(proc.stdin, "stop")
                try:
                    proc.wait(WAIT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    print(f"Loom / reference, the median of {len(ratios)} rounds: {statistics.median(ratios):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.consumer_instructions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--warm", type=int, default=100, help="events applied before counting")
    parser.add_argument("--events", type=int, default=500, help="events counted")
    parser.add_argument(
        "--measure",
        choices=["instructions", "misses", "calls", "cpu", "syscalls"],
        default="instructions",
        help="instructions (callgrind), second-level cache misses (callgrind's simulation), "
        "Python calls (cProfile), CPU time or system calls (strace), per event",
    )
    parser.add_argument("--rounds", type=int, default=6, help="with --measure cpu: rounds a side")
    parser.add_argument(
        "--l2", type=int, help="with --measure misses: the second level, KiB (1024)"
    )
    parser.add_argument("--keep", type=Path, help="a folder to keep the profiles in")
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--log-level", default="INFO", help="LOOM_LOG_LEVEL of Loom's Receiver")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--profile", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.profile)
        return
    from bench.broker import databases
    from tests.brokers import running_nats

    if args.measure == "cpu":
        with running_nats() as server, databases("postgres", len(SIDES)) as (_, urls, _pid):
            cpu_rounds(urls, server.url, args)
        return
    unit = {
        "instructions": "instructions",
        "misses": "second-level cache misses",
        "calls": "calls",
        "syscalls": "system calls",
    }[args.measure]
    per: dict[str, float] = {}
    with running_nats() as server, databases("postgres", len(args.sides)) as (_, urls, _pid):
        for side, url in zip(args.sides, urls, strict=True):
            per[side] = one(side, url, server.url, args)
            print(f"{side}: {per[side]:,.0f} {unit}/event", flush=True)
    if len(per) == 2:
        print(f"Loom / reference: {per['loom'] / per['reference']:.2f}")


if __name__ == "__main__":
    main()
