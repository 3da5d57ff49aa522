"""Benchmark: CPU instructions per request of the generated service against the hand-written one.

Time-based figures (bench/operation.py, bench/transfer.py) move by 10-20 % with the machine's load;
the number of instructions a server executes per request does not. Here both servers run under
valgrind (`--tool=cachegrind --cache-sim=no`, which counts every instruction of the process, its
threads included) behind real uvicorn, on the same database, and answer the same requests as in
bench/operation.py and bench/transfer.py, sequentially. Each server is run twice, for
`--small` and for `--large` requests, so that start-up, seeding and shut-down cancel out:

    instructions/request = (I(large) - I(small)) / (large - small)

What it does not see: time spent waiting, in the kernel, or lost to cache misses. The ratio is
of work done, beside the time-based ratios, not instead of them.

    .venv/bin/python bench/instructions.py                 # SQLite and PostgreSQL
    .venv/bin/python bench/instructions.py --db sqlite --small 30 --large 230

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

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import operation, transfer
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


def _under_valgrind(server: Server, log: Path) -> Server:
    server.prefix = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
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
        httpx.AsyncClient(base_url=gen.url, timeout=600) as gc,
        httpx.AsyncClient(base_url=ref.url, timeout=600) as rc,
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


def _instructions(kind: str, scenario: str, requests: int, against: str) -> tuple[int, int]:
    """Instructions of the generated server and of the other one (`_other`) over one run."""
    with (
        database(kind) as (_label, url),
        tempfile.TemporaryDirectory() as tmp,
    ):
        logs = Path(tmp)
        gen = _under_valgrind(generated_server(url, logs / "build"), logs / "gen.log")
        ref = _under_valgrind(_other(url, logs / "other", against), logs / "ref.log")
        with serving(gen, ref):
            if against == "reference":
                accounts = asyncio.run(seed(gen, url, 2))
            else:  # no reference table: both servers use the generated service's accounts
                accounts = Accounts(asyncio.run(seed_generated(gen, 2)), [])
            calls = SCENARIOS[scenario](accounts)
            asyncio.run(_drive(gen, ref, calls, requests, against != "reference"))
        counts = []
        for log in ("gen.log", "ref.log"):
            found = _REFS.search((logs / log).read_text())
            if found is None:
                raise SystemExit(f"no instruction count in {log}:\n{(logs / log).read_text()}")
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
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    scenarios = ["operation", "transfer"] if args.scenario == "both" else [args.scenario]
    rows = []
    for kind in kinds:
        for scenario in scenarios:
            g1, r1 = _instructions(kind, scenario, args.small, args.against)
            g2, r2 = _instructions(kind, scenario, args.large, args.against)
            n = args.large - args.small
            gen, ref = (g2 - g1) / n, (r2 - r1) / n
            label = "SQLite" if kind == "sqlite" else "PostgreSQL 15"
            rows.append(
                f"| {label} | {scenario} | {gen / 1e6:.3f} M | {ref / 1e6:.3f} M "
                f"| **{gen / ref:.2f}** |"
            )
            print(rows[-1], flush=True)
    other = "hand-written" if args.against == "reference" else "without the console"
    print(f"\n| database | route | generated | {other} | ratio |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
