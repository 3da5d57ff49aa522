"""Benchmark: what the web console at /_loom/ costs the service's request path (issue 30 §2).

Two servers of the same generated banking service on one database, served alike
(bench/_serving.py): one as `loom run` serves it, the console mounted; one with
`LOOM_NO_CONSOLE=1` (`--no-console`). Both answer `POST /api/accounts/{id}/deposit` (as
bench/operation.py), each on accounts of its own, in alternating rounds. Figures: requests per
second and server CPU per request, with the console / without. Target: rate ratio >= 0.98.

    .venv/bin/python bench/console.py                      # SQLite and PostgreSQL, 1 and 16 connections
    .venv/bin/python bench/console.py --db sqlite --connections 1 --rounds 3
    .venv/bin/python bench/console.py --same               # both with the console: the bench's own spread

`--same` serves the console on both servers: the ratio of two identical servers, which is what
the rate's spread from run to run is made of (an A/A comparison). bench/instructions.py
`--against no-console` counts the console's cost in instructions instead, which the machine's load
does not move.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._load import LoadClient
from bench._serving import (
    Call,
    compare,
    database,
    expect,
    generated_server,
    seed_generated,
    serving,
)

BODY = {"amount": 1}


def deposit(accounts: list[str]) -> Call:
    async def call(client: LoadClient, caller: int, n: int) -> int:
        return expect(
            await client.post(f"/api/accounts/{accounts[caller]}/deposit", json=BODY), 204
        )

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--same", action="store_true", help="the console on both servers (A/A)")
    args = parser.parse_args()
    levels = [int(c) for c in args.connections.split(",")]
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    rows = []
    for kind in kinds:
        with database(kind) as (label, url), tempfile.TemporaryDirectory() as build:
            with_console = generated_server(url, Path(build) / "with")
            without = generated_server(url, Path(build) / "without")
            if not args.same:
                without.env["LOOM_NO_CONSOLE"] = "1"
            with serving(with_console, without):
                n = max(levels)
                accounts = asyncio.run(seed_generated(with_console, 2 * n))
                calls = (deposit(accounts[:n]), deposit(accounts[n:]))
                for level in levels:
                    result = asyncio.run(
                        compare(
                            (with_console, calls[0]),
                            (without, calls[1]),
                            requests=args.requests,
                            rounds=args.rounds,
                            concurrency=level,
                        )
                    )
                    rows.append(result.row(label, level))
                    print(rows[-1], flush=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nconsole mounted / not, {args.rounds} rounds x {args.requests}, load {' '.join(load)}")
    print(
        "| database | connections | with the console | without | ratio | CPU/request with "
        "| without | CPU ratio | 409 |\n|---|---|---|---|---|---|---|---|---|"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
