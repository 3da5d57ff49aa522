"""Benchmark: what tracing costs the deposit route (docs/observability.md#traces).

Three uvicorn servers of the generated banking service on one database, each depositing into its
own accounts, in alternating rounds (bench/_serving.py):

- `none`: the OpenTelemetry SDK and exporters cannot be imported (bench/no_otel/ first on its
  PYTHONPATH), as if they were not installed (FastAPI itself imports the API): the reference;
- `off`: installed, nothing configured: the service as `loom run` serves it by default;
- `exporting`: every request traced (sampler always on) and exported over OTLP/HTTP to a local
  endpoint that takes the spans and keeps nothing (bench/_otlp_sink.py, another process);
- `sampled`: the same, one trace in ten kept (`OTEL_TRACES_SAMPLER=parentbased_traceidratio`,
  `OTEL_TRACES_SAMPLER_ARG=0.1`), as a busy service would run.

Figures: requests per second and server CPU per request (the exporter's thread included), each
as a ratio to `none`. Targets (issue 27): exporting <= 10 % overhead, off <= 2 %.

    .venv/bin/python bench/tracing.py                      # SQLite and PostgreSQL, 1 and 16 connections
    .venv/bin/python bench/tracing.py --db sqlite --connections 1 --requests 500 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._load import LoadClient
from bench._serving import (
    ROOT,
    Round,
    Server,
    _free_port,
    _round,
    database,
    expect,
    generated_server,
    serving,
)

BODY = {"amount": 1}
START = 10**9
MODES = ("none", "off", "exporting", "sampled")


def servers(url: str, build: Path, sink: Server) -> dict[str, Server]:
    """The four servers of one build (compiled once), each on a port of its own."""
    built = generated_server(url, build)
    exporting = {
        "LOOM_OTEL_ENDPOINT": sink.url,
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_SERVICE_NAME": "bench",
        # exported within 0.1 s of the round that made them, not during the next server's
        # round (`settled` waits for that)
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    sampled = {
        **exporting,
        "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
        "OTEL_TRACES_SAMPLER_ARG": "0.1",
    }
    env = {"none": {}, "off": {}, "exporting": exporting, "sampled": sampled}
    return {
        mode: dataclasses.replace(
            built,
            name=mode,
            port=_free_port(),
            env={**built.env, **env[mode]},
            first_paths=[ROOT / "bench" / "no_otel"] if mode == "none" else [],
        )
        for mode in MODES
    }


async def accounts(server: Server, count: int) -> list[str]:
    out = []
    async with httpx.AsyncClient(base_url=server.url) as client:
        r = await client.post("/api/workflows/register_customer", json={"name": server.name})
        owner = r.json()
        for n in range(count):
            r = await client.post(
                "/api/workflows/open_account",
                json={"owner": owner, "number": f"{server.name}-{n}"},
            )
            out.append(r.json())
            deposit = await client.post(f"/api/accounts/{out[-1]}/deposit", json={"amount": START})
            expect(deposit, 204)
    return out


async def measure(
    by_mode: dict[str, Server],
    sink: Server,
    ids: dict[str, list[str]],
    requests: int,
    rounds: int,
    level: int,
) -> dict[str, list[Round]]:
    def call(mode: str):  # type: ignore[no-untyped-def]
        async def deposit(client: LoadClient, caller: int, n: int) -> int:
            return expect(
                await client.post(f"/api/accounts/{ids[mode][caller]}/deposit", json=BODY), 204
            )

        return deposit

    out: dict[str, list[Round]] = {mode: [] for mode in MODES}
    for mode in MODES:  # warm-up
        await _round(by_mode[mode], min(200, requests), level, call(mode))
        await settled(sink)
    for n in range(rounds):
        # each round in another order: no mode always runs after the exporting one
        for mode in MODES[n % len(MODES) :] + MODES[: n % len(MODES)]:
            out[mode].append(await _round(by_mode[mode], requests, level, call(mode)))
            await settled(sink)
    return out


async def settled(sink: Server) -> None:
    """Wait until the sink took nothing for 0.3 s: the exporters are done with the last round's
    spans, and their threads take no CPU from the next round."""
    async with httpx.AsyncClient(base_url=sink.url) as client:
        last, quiet = None, 0
        while quiet < 3:
            now = (await client.get("/count")).json()["exports"]
            quiet = quiet + 1 if now == last else 0
            last = now
            await asyncio.sleep(0.1)


def row(label: str, level: int, result: dict[str, list[Round]]) -> str:
    rate = {m: statistics.median(r.rate for r in result[m]) for m in MODES}
    cpu = {m: statistics.median(r.cpu_ms for r in result[m]) for m in MODES}
    cells = [f"{rate[m]:.0f} req/s, {cpu[m]:.2f} ms" for m in MODES]
    ratios = [
        f"**{rate[m] / rate['none']:.3f}** / **{cpu[m] / cpu['none']:.3f}**" for m in MODES[1:]
    ]
    return f"| {label} | {level} | " + " | ".join(cells + ratios) + " |"


HEADER = (
    "| database | connections | none | off | exporting | sampled 1/10 | off: rate / CPU ratio "
    "| exporting: rate / CPU ratio | sampled: rate / CPU ratio |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and server")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--connections", default="1,16", help="concurrent connections")
    args = parser.parse_args()
    levels = [int(c) for c in args.connections.split(",")]
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    rows = []
    for kind in kinds:
        with database(kind) as (label, url), tempfile.TemporaryDirectory() as build:
            sink = Server("sink", "bench._otlp_sink:build_app", ROOT, {})
            by_mode = servers(url, Path(build), sink)
            with serving(*by_mode.values(), sink):  # the sink stops last: it takes the last export
                ids = {m: asyncio.run(accounts(s, max(levels))) for m, s in by_mode.items()}
                for level in levels:
                    result = asyncio.run(
                        measure(by_mode, sink, ids, args.requests, args.rounds, level)
                    )
                    rows.append(row(label, level, result))
                    print(rows[-1], flush=True)
                taken = httpx.get(f"{sink.url}/count").json()
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(
        f"\ntracing overhead, deposit route, {args.rounds} rounds x {args.requests} requests; "
        f"last sink took {taken['exports']} exports, {taken['bytes']} bytes; "
        f"load average {' '.join(load)}"
    )
    print(HEADER)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
