"""Benchmark: what finding a route costs in one big context.

FastAPI tries an app's routes in turn, so a request to a route declared late would pay for every
route before it; the generated service's route index (runtime/service/route_index.py) tries only
the routes a path can match, and this bench checks that it does. It builds `bench/compiler.py`'s
one-context model of N aggregates (each with its routes: read, list, create, operations; every
ten share a workflow), serves it in this process
(the generated app over ASGI, no server, an in-memory SQLite database) and times the same request,
`GET /api/<aggregate>s/{id}` of an id that does not exist (a 404 after one query), to the first
aggregate declared and to the last one. The first is the reference: the same work, found at once.

    .venv/bin/python bench/routes.py                       # 10, 100 and 300 aggregates
    .venv/bin/python bench/routes.py --sizes 1000 --requests 300

Figures: CPU per request (`time.process_time`, this process) of each, their ratio, and the
difference per route tried before the last one's.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "src"), str(Path(__file__).parents[1])]

from bench.compiler import write_model

MISSING = "01a24633-74a0-772f-930a-69abf14479f7"


def _app(n: int, folder: Path) -> Any:
    from loom.build.package import build_model
    from loom.lang import compile_files

    result = compile_files(write_model(n, folder / "model", "one-context"))
    assert result.model is not None, result.diagnostics
    package = f"routes{n}"
    build_model(result.model, folder / "out" / package)
    sys.path.insert(0, str(folder / "out"))
    os.environ["LOOM_DATABASE_URL"] = "sqlite+aiosqlite://"
    return importlib.import_module(f"{package}.main").build_app()


async def _warm(client: httpx.AsyncClient, url: str) -> None:
    for _ in range(30):
        assert (await client.get(url)).status_code == 404


async def _batch(client: httpx.AsyncClient, url: str, requests: int) -> float:
    """Microseconds of CPU per request over one batch."""
    started = time.process_time()
    for _ in range(requests):
        await client.get(url)
    return (time.process_time() - started) / requests * 1e6


async def _compare(client: httpx.AsyncClient, first: str, last: str, requests: int) -> list[float]:
    """CPU per request of each path, the median of five batches each, taking turns (so that the
    process warming up or the machine's load moving weighs on both alike)."""
    urls = [path.replace("{id}", MISSING) for path in (first, last)]
    for url in urls:
        await _warm(client, url)
    batches: list[list[float]] = [[], []]
    for _ in range(5):
        for i, url in enumerate(urls):
            batches[i].append(await _batch(client, url, requests))
    return [statistics.median(b) for b in batches]


async def measure(n: int, requests: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        app = _app(n, Path(tmp))
        paths = [p for r in app.routes if (p := getattr(r, "path", "")).startswith("/api/")]
        reads = [p for p in paths if p.endswith("s/{id}") and "/workflows/" not in p]
        first, last = reads[0], reads[-1]
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
                early, late = await _compare(client, first, last, requests)
        before = paths.index(last)
        return (
            f"| {n} | {len(paths)} | {early:.0f} µs | {late:.0f} µs | **{late / early:.2f}** "
            f"| {(late - early) / max(before, 1):.2f} µs |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 300])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    rows = [asyncio.run(measure(n, args.requests)) for n in args.sizes]
    print(
        "| aggregates | routes under /api | first aggregate's GET | last aggregate's GET "
        "| last / first | per route tried before |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
