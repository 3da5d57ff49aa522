"""Scenario: `pg_ctl restart -m immediate` of the PostgreSQL server under a real `loom run` taking
durable commands from concurrent clients.

An immediate restart kills every backend mid-statement (mid-COMMIT included) and recovers from the
WAL, like a crash. While the server is away the service must answer what it knows: a 2xx for what
committed, a 409 for a lost race, a 503 when the database is unreachable or a COMMIT's outcome is
unknown; never a 500 and never a hang (every request has a bounded timeout). Afterwards it answers
again, nothing acknowledged is lost, and the relay delivers every committed event once."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from .accounting import COMMANDS, Audit, books
from .load import Ledger, client, send
from .servers import CHAOS_MODEL, CrashableCluster, Server, copy_model, new_pg_database, serving

# What a client may be told while the database restarts.
ALLOWED = frozenset({"200", "409", "503"})


@dataclass(frozen=True)
class RestartPlan:
    restarts: int = 2
    interval: float = 4.0  # seconds of load before each restart, and after the last
    clients: int = 8
    lease: float = 4.0
    request_timeout: float = 15.0  # longer than any answer may take: a hang shows as a timeout
    recovery_timeout: float = 30.0
    settle_timeout: float = 60.0


async def answers_again(base: str, timeout: float) -> float | None:
    """Seconds until a read answers 200 again; None when it does not within `timeout`."""
    started = time.monotonic()
    async with httpx.AsyncClient(timeout=5) as http:
        while time.monotonic() - started < timeout:
            outcome = await send(http, "GET", f"{base}/api/jobs", params={"limit": 1})
            if outcome.label == "200":
                return time.monotonic() - started
            await asyncio.sleep(0.1)  # a measured wait: None past `timeout`, the audit says so
    return None


async def pg_restart(
    workdir: Path, cluster: CrashableCluster, plan: RestartPlan, database: str
) -> tuple[Audit, list[float | None]]:
    url = await new_pg_database(cluster.cluster, database, synchronous_commit=True)
    model = copy_model(workdir / "model", [CHAOS_MODEL])
    server = Server(model, url, name="server", lease=plan.lease, log_dir=workdir)
    ledger = Ledger()
    recoveries: list[float | None] = []
    restart_seconds: list[float] = []
    with serving(server):
        server.start()
        await server.wait_ready()
        done = asyncio.Event()

        async def customer(n: int) -> None:
            async with client(plan.request_timeout) as http:
                for i in itertools.count():
                    if done.is_set():
                        return
                    ref = f"c{n}-{i}"
                    url = server.base + COMMANDS[i % len(COMMANDS)]
                    ledger.note(ref, await send(http, "POST", url, json={"ref": ref}))
                    if ledger.kinds[ref] != "acknowledged":
                        await asyncio.sleep(0.05)  # the database is down: do not spin on it

        async def restarter() -> None:
            for _ in range(plan.restarts):
                await asyncio.sleep(plan.interval)  # the plan's pacing: load between restarts
                restart_seconds.append(await asyncio.to_thread(cluster.restart_immediate))
                recoveries.append(await answers_again(server.base, plan.recovery_timeout))
            await asyncio.sleep(plan.interval)  # and load after the last one
            done.set()

        await asyncio.gather(restarter(), *(customer(n) for n in range(plan.clients)))
        audit = Audit(ledger, await books(server.base, url, settle_timeout=plan.settle_timeout))
    shown = ", ".join("never" if r is None else f"{r:.1f}s" for r in recoveries)
    audit.extra = [
        (
            f"pg_ctl restart -m immediate x{plan.restarts} (took "
            f"{', '.join(f'{s:.1f}s' for s in restart_seconds)}), clients {plan.clients}, "
            f"answering again after: {shown}"
        ),
    ]
    return audit, recoveries
