"""Benchmark: the generated `transfer` workflow against a hand-written FastAPI + SQLAlchemy endpoint.

Both apps run in this one process over ASGI (no network), on the same database and even the same
SQLAlchemy engine, in one run; rounds alternate between them so that a noisy neighbour hurts both
alike. The figure that matters is the ratio generated / hand-written, not the absolute throughput.

    .venv/bin/python bench/transfer.py                 # SQLite and PostgreSQL
    .venv/bin/python bench/transfer.py --db sqlite --requests 500 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.reference_transfer import accounts as ref_accounts
from bench.reference_transfer import build_reference_app, metadata
from loom.testing import build_service

BANKING = ROOT / "examples/banking/banking.loom"
START_BALANCE = 10**12


async def _post_ok(client: httpx.AsyncClient, url: str, payload: dict[str, object]) -> None:
    r = await client.post(url, json=payload)
    if r.status_code >= 300:
        raise SystemExit(f"benchmark request failed: {url} -> {r.status_code} {r.text}")


async def _timed(n: int, concurrency: int, call: Callable[[int], Awaitable[None]]) -> float:
    """Requests per second for n calls, `concurrency` at a time."""
    start = time.perf_counter()
    for base in range(0, n, concurrency):
        await asyncio.gather(*(call(base + i) for i in range(min(concurrency, n - base))))
    return n / (time.perf_counter() - start)


async def measure(url: str, requests: int, rounds: int, concurrency: int) -> dict[str, float]:
    main = build_service([BANKING])
    app = main.build_app(url)
    async with app.router.lifespan_context(app):
        engine = app.state.loom.engine
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        transport = httpx.ASGITransport(app=app)
        gen = httpx.AsyncClient(transport=transport, base_url="http://gen")
        ref = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=build_reference_app(engine)), base_url="http://ref"
        )

        # One pair of accounts per concurrent caller, so that concurrent requests measure
        # throughput rather than lock contention on one pair (which the 409 tests cover).
        owner = (await gen.post("/api/workflows/register_customer", json={"name": "B"})).json()
        gen_pairs: list[list[object]] = []
        ref_pairs: list[list[object]] = []
        for pair in range(concurrency):
            ids: list[object] = []
            for side in (1, 2):
                r = await gen.post(
                    "/api/workflows/open_account",
                    json={"owner": owner, "number": f"G-{pair}-{side}"},
                )
                ids.append(r.json())
                await _post_ok(gen, f"/api/accounts/{r.json()}/deposit", {"amount": START_BALANCE})
            gen_pairs.append(ids)
            ref_pairs.append([uuid.uuid4(), uuid.uuid4()])
        async with engine.begin() as conn:
            await conn.execute(
                ref_accounts.insert(),
                [
                    {
                        "id": i,
                        "version": 1,
                        "number": f"R-{i}",
                        "balance": START_BALANCE,
                        "frozen": 0,
                    }
                    for pair in ref_pairs
                    for i in pair
                ],
            )

        def payload(pairs: list[list[object]], i: int) -> dict[str, object]:
            # Call i uses pair i % concurrency, alternating its direction so balances never run out.
            a, b = pairs[i % concurrency]
            if (i // concurrency) % 2:
                a, b = b, a
            return {"fromAccount": str(a), "toAccount": str(b), "amount": 1}

        conflicts = {"generated": 0, "hand-written": 0}

        async def call_gen(i: int) -> None:
            r = await gen.post("/api/workflows/transfer", json=payload(gen_pairs, i))
            if r.status_code == 409:
                conflicts["generated"] += 1
            elif r.status_code != 200:
                raise SystemExit(f"generated transfer failed: {r.status_code} {r.text}")

        async def call_ref(i: int) -> None:
            r = await ref.post("/transfer", json=payload(ref_pairs, i))
            if r.status_code == 409:
                conflicts["hand-written"] += 1
            elif r.status_code != 200:
                raise SystemExit(f"reference transfer failed: {r.status_code} {r.text}")

        await _timed(min(200, requests), concurrency, call_gen)  # warm-up both paths
        await _timed(min(200, requests), concurrency, call_ref)
        gen_rates, ref_rates = [], []
        for _ in range(rounds):
            gen_rates.append(await _timed(requests, concurrency, call_gen))
            ref_rates.append(await _timed(requests, concurrency, call_ref))
        await gen.aclose()
        await ref.aclose()
    g, h = statistics.median(gen_rates), statistics.median(ref_rates)
    return {
        "generated": g,
        "hand-written": h,
        "ratio": g / h,
        **{f"409 {k}": v for k, v in conflicts.items()},
    }


def _report(db: str, result: dict[str, float]) -> str:
    return (
        f"| {db} | {result['generated']:.0f} req/s | {result['hand-written']:.0f} req/s "
        f"| **{result['ratio']:.2f}** |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and app")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()

    rows = []
    if args.db in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            rows.append(
                ("SQLite", asyncio.run(measure(url, args.requests, args.rounds, args.concurrency)))
            )
    if args.db in ("postgres", "both"):
        from tests.pgcluster import running_cluster

        with running_cluster() as cluster:
            url = cluster.url()
            rows.append(
                (
                    "PostgreSQL 15",
                    asyncio.run(measure(url, args.requests, args.rounds, args.concurrency)),
                )
            )

    print(
        f"transfer workflow, {args.rounds} rounds x {args.requests} requests, concurrency {args.concurrency}"
    )
    print("| database | generated | hand-written | ratio |")
    print("|---|---|---|---|")
    for db, result in rows:
        print(_report(db, result))
    for db, result in rows:
        extra = {k: v for k, v in result.items() if k.startswith("409")}
        if any(extra.values()):
            print(f"{db}: conflicts {extra}")


if __name__ == "__main__":
    main()
