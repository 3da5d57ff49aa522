"""Benchmark: the page route under a read rule against the same route without one.

One generated service (a real uvicorn subprocess, bench/_serving.py) holds two aggregates of the
same shape, each with ROWS rows (100,000 by default) owned by 1,000 claimants: `Claim`, read
through `filter VisibleToCaller` (`currentUser.isSystem || currentUser.hasRole("assessor") ||
claimant == currentUser.id`), and `Entry`, read through no filter. Both tables get an index on
`claimant` (a read rule's compared column: the author's to create). Rounds alternate between:

- staff: an assessor pages `GET /api/claims` (the rule admits every row: the same SQL, plus the
  rule built per read) against `GET /api/entries` — the rule's own cost;
- owner: a claimant pages `GET /api/claims` (the rule narrows the page and its `total` to their
  100 rows, through the index) against `GET /api/entries` (every row).

Figures: requests per second and server CPU per request, with the rule / without it.

    .venv/bin/python bench/read_rules.py                          # PostgreSQL, 1 and 16 connections
    .venv/bin/python bench/read_rules.py --db sqlite --rows 10000 --requests 300 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._load import LoadClient
from bench._serving import Call, Comparison, Pool, Server, compare, database, expect, serving
from tests.e2e.tokens import SECRET, token

MODEL = """
context Desk {
  aggregate Claim { claimant: string  notes: string = "" }
  criterion VisibleToCaller of Claim =
    currentUser.isSystem || currentUser.hasRole("assessor") || claimant == currentUser.id
  repository Claims for Claim { filter VisibleToCaller }
  aggregate Entry { claimant: string  notes: string = "" }
  repository Entries for Entry { }
}
"""
OWNERS = 1000
HEADER = (
    "| database | caller | connections | with the rule | without | ratio | server CPU/request "
    "with | without | CPU ratio |\n|---|---|---|---|---|---|---|---|---|"
)


def build(url: str, build_dir: Path, pool: Pool) -> Server:
    from loom.build.package import build_model
    from loom.lang import compile_sources

    result = compile_sources({"read_rules.loom": MODEL})
    assert result.model is not None, result.diagnostics
    build_model(result.model, build_dir / "rr")
    env = {"LOOM_DATABASE_URL": url, "LOOM_JWT_SECRET": SECRET, **pool.env("LOOM")}
    return Server("generated", "rr.main:build_app", build_dir, env, as_loom_run=True)


async def seed(url: str, build_dir: Path, rows: int) -> None:
    """`rows` rows in each table, claimant `user-<n % OWNERS>`, and the index on `claimant`."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    sys.path.insert(0, str(build_dir))
    tables = importlib.import_module("rr.desk.tables")
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        for table in (tables.claims, tables.entries):
            for start in range(0, rows, 10_000):
                await conn.execute(
                    table.insert(),
                    [
                        {
                            "id": uuid.uuid4(),
                            "version": 1,
                            "claimant": f"user-{n % OWNERS}",
                            "notes": "",
                        }
                        for n in range(start, min(rows, start + 10_000))
                    ],
                )
            name = table.name
            await conn.execute(text(f"CREATE INDEX {name}_claimant ON {name} (claimant)"))
    async with engine.connect() as conn:  # fresh planner statistics (a no-op on SQLite)
        if engine.dialect.name == "postgresql":
            await conn.execute(text("COMMIT"))
            await conn.execute(text("ANALYZE"))
    await engine.dispose()


Headers = Callable[[int], dict[str, str]]
STAFF: Headers = lambda caller: token(sub="sam", roles=["assessor"])  # noqa: E731
OWNER: Headers = lambda caller: token(sub=f"user-{caller}")  # noqa: E731


def page(path: str, who: Headers, total: int | None) -> Call:
    """GET the first page of `path` as `who(caller)`, checking its `total` (when given)."""

    async def call(client: LoadClient, caller: int, n: int) -> int:
        r = await client.get(path, headers=who(caller))
        if total is not None and r.status_code == 200 and r.json()["total"] != total:
            raise SystemExit(f"{path}: total {r.json()['total']}, expected {total}")
        return expect(r, 200)

    return call


def row(result: Comparison, label: str, caller: str, level: int) -> str:
    g_rate = Comparison._median(result.generated, "rate")
    h_rate = Comparison._median(result.reference, "rate")
    g_cpu = Comparison._median(result.generated, "cpu_ms")
    h_cpu = Comparison._median(result.reference, "cpu_ms")
    return (
        f"| {label} | {caller} | {level} | {g_rate:.0f} req/s | {h_rate:.0f} req/s "
        f"| **{g_rate / h_rate:.2f}** | {g_cpu:.2f} ms | {h_cpu:.2f} ms | **{g_cpu / h_cpu:.2f}** |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="postgres")
    parser.add_argument("--rows", type=int, default=100_000, help="rows in each table")
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and route")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", default="1,16", help="concurrent connections")
    args = parser.parse_args()
    levels = [int(c) for c in args.connections.split(",")]
    # every claimant owns the same number of rows when ROWS is a multiple of OWNERS
    mine = args.rows // OWNERS if args.rows % OWNERS == 0 else None
    rows = []
    with database(args.db) as (label, url), tempfile.TemporaryDirectory() as tmp:
        server = build(url, Path(tmp), Pool())
        with serving(server):
            asyncio.run(seed(url, Path(tmp), args.rows))
            for caller, who, total in (("staff", STAFF, args.rows), ("owner", OWNER, mine)):
                for level in levels:
                    result = asyncio.run(
                        compare(
                            (server, page("/api/claims", who, total)),
                            (server, page("/api/entries", who, args.rows)),
                            requests=args.requests,
                            rounds=args.rounds,
                            concurrency=level,
                        )
                    )
                    rows.append(row(result, label, caller, level))
                    print(rows[-1], flush=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"\npage route with a read rule vs without, {args.rows} rows per table, "
        f"{args.rounds} rounds x {args.requests} requests, load average {' '.join(load)}"
    )
    print(HEADER)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
