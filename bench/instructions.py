"""Benchmark: CPU instructions per request of the generated service against the hand-written one.

Time-based figures (bench/operation.py, bench/transfer.py) move by 10-20 % with the machine's load;
the number of instructions a server executes per request does not. Here both servers run under
valgrind (`--tool=cachegrind --cache-sim=no`, which counts every instruction of the process, its
threads included) behind real uvicorn, on the same database, and answer the same requests as in
bench/operation.py and bench/transfer.py, sequentially. Each server is run twice, for
`--small` and for `--large` requests, so that start-up, seeding and shut-down cancel out:

    instructions/request = (I(large) - I(small)) / (large - small)

What it does not see: time spent waiting, in the kernel, or lost to cache misses. The ratio is
of work done, beside the time-based ratios, not instead of them. With `--misses` it also counts
the misses of a simulated second-level cache per request (`cache_sim`): the memory a request
touches beyond what stays close to the core, which costs time that no instruction count shows.

    .venv/bin/python bench/instructions.py                 # SQLite and PostgreSQL
    .venv/bin/python bench/instructions.py --db sqlite --small 30 --large 230
    .venv/bin/python bench/instructions.py --db postgres --scenario transfer --misses [--l2 512]

With `--against no-console` the other server is the same generated service with the web console
unmounted (`LOOM_NO_CONSOLE=1`, as `loom run --no-console`), answering the same requests: what
the console costs the request path (issue 30 §2), in instructions rather than in a rate that
swings with the machine's load (bench/console.py).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import operation, transfer
from bench._load import LoadClient
from bench._serving import (
    Accounts,
    Scenario,
    Server,
    database,
    generated_server,
    reference_server,
    seed,
    seed_generated,
    serving,
)

# the requests of bench/operation.py and bench/transfer.py, as their caller 0 sends them
SCENARIOS: dict[str, Callable[[Accounts], Scenario]] = {
    "operation": operation.scenario,
    "transfer": transfer.scenario,
}

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_MISSES = re.compile(r"LL misses:\s+([\d,]+)")
L2_KIB = 1024  # the second level of this machine's cores (AMD EPYC: 1 MiB, 8-way)


def cache_sim(l2_kib: int) -> list[str]:
    """valgrind's options to simulate two levels of cache: the first of this machine's cores
    (32 KiB of instructions and 32 KiB of data, 8-way) and a second of `l2_kib` KiB as the last.
    What misses there is served by the third level, shared with the host's other tenants, at tens
    of cycles a line: the cost of a larger working set (more code, types and objects touched),
    which an instruction count does not show. A core's hyperthread sibling, another tenant's on a
    shared host, may hold half of its second level: hence `--l2`."""
    return ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", f"--LL={l2_kib * 1024},8,64"]


def _under_valgrind(server: Server, log: Path, l2_kib: int | None = None) -> Server:
    server.prefix = [
        "valgrind",
        "--tool=cachegrind",
        *(cache_sim(l2_kib) if l2_kib else ["--cache-sim=no"]),
        "--cachegrind-out-file=/dev/null",
        f"--log-file={log}",
    ]
    server.start_timeout = 600
    # A fixed hash seed: with a random one, dicts and sets of strings lay out differently from
    # run to run, and the count per request moved by up to 1.5 % between two runs of the same
    # code (the same seed for both servers; which seed does not matter).
    server.env["PYTHONHASHSEED"] = "0"
    return server


async def _drive(gen: Server, ref: Server, calls: Scenario, requests: int, same: bool) -> None:
    """`requests` of the scenario to each server in turn; `same`: the other server is a
    generated one too, sent the generated calls."""
    other = calls.generated if same else calls.reference
    async with (
        LoadClient(gen.url, 1, timeout=600) as gc,
        LoadClient(ref.url, 1, timeout=600) as rc,
    ):
        for n in range(1, requests + 1):
            await calls.generated(gc, 0, n)
            await other(rc, 0, n)


def _other(url: str, build: Path, against: str) -> Server:
    """The server the generated one is compared with: the hand-written reference, or the same
    generated service without the console."""
    if against == "reference":
        return reference_server(url)
    server = generated_server(url, build)
    server.env["LOOM_NO_CONSOLE"] = "1"
    return server


def _instructions(
    kind: str, scenario: str, requests: int, against: str, l2_kib: int | None
) -> tuple[int, int]:
    """Instructions (with `l2_kib`, the misses of a simulated second level of that many KiB) of
    the generated server and of the other one (`_other`) over one run."""
    with (
        database(kind) as (_label, url),
        tempfile.TemporaryDirectory() as tmp,
    ):
        logs = Path(tmp)
        gen = _under_valgrind(generated_server(url, logs / "build"), logs / "gen.log", l2_kib)
        ref = _under_valgrind(_other(url, logs / "other", against), logs / "ref.log", l2_kib)
        with serving(gen, ref):
            if against == "reference":
                accounts = asyncio.run(seed(gen, url, 2))
            else:  # no reference table: both servers use the generated service's accounts
                accounts = Accounts(asyncio.run(seed_generated(gen, 2)), [])
            calls = SCENARIOS[scenario](accounts)
            asyncio.run(_drive(gen, ref, calls, requests, against != "reference"))
        counts = []
        for log in ("gen.log", "ref.log"):
            found = (_MISSES if l2_kib else _REFS).search((logs / log).read_text())
            if found is None:
                raise SystemExit(f"no count in {log}:\n{(logs / log).read_text()}")
            counts.append(int(found.group(1).replace(",", "")))
    return counts[0], counts[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--scenario", choices=["operation", "transfer", "both"], default="both")
    parser.add_argument("--small", type=int, default=50)
    parser.add_argument("--large", type=int, default=350)
    parser.add_argument("--against", choices=["reference", "no-console"], default="reference")
    parser.add_argument(
        "--misses", action="store_true", help="count simulated second-level cache misses"
    )
    parser.add_argument("--l2", type=int, default=L2_KIB, help="with --misses: its size, KiB")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    scenarios = ["operation", "transfer"] if args.scenario == "both" else [args.scenario]
    rows = []
    for kind in kinds:
        for scenario in scenarios:
            l2_kib = args.l2 if args.misses else None
            g1, r1 = _instructions(kind, scenario, args.small, args.against, l2_kib)
            g2, r2 = _instructions(kind, scenario, args.large, args.against, l2_kib)
            n = args.large - args.small
            gen, ref = (g2 - g1) / n, (r2 - r1) / n
            label = "SQLite" if kind == "sqlite" else "PostgreSQL 15"
            if args.misses:
                figures = f"{gen:,.0f} | {ref:,.0f}"
            else:
                figures = f"{gen / 1e6:.3f} M | {ref / 1e6:.3f} M"
            rows.append(f"| {label} | {scenario} | {figures} | **{gen / ref:.2f}** |")
            print(rows[-1], flush=True)
    other = "hand-written" if args.against == "reference" else "without the console"
    unit = "second-level misses a request" if args.misses else "instructions a request"
    print(f"\n{unit}:\n| database | route | generated | {other} | ratio |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
