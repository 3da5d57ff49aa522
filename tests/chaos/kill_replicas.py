"""Scenario: two replicas of one service on one database, one of them killed with SIGKILL again
and again, while concurrent clients send durable commands to both.

Each command (`place`, transactional; `placeAuto` and `placeEmit`, not transactional, the event
raised by an operation or emitted by the body) stores a Job under a
reference no other request uses and commits a durable Placed event with it, whose reaction stores
one Applied row. The clients keep going to whichever replica is up; a killed replica is restarted
at once. Afterwards the survivors settle, and the run is audited (accounting.py): acknowledged
versus stored, events committed versus reactions applied, the outbox and the dead letters."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass
from pathlib import Path

from .accounting import COMMANDS, Audit, books
from .load import Ledger, client, send
from .servers import CHAOS_MODEL, Server, copy_model, serving


@dataclass(frozen=True)
class KillPlan:
    kills: int = 3
    interval: float = 3.0  # seconds between a replica being up again and the next kill
    clients: int = 8
    lease: float = 4.0  # the relays' lease: how long a killed relay's claimed rows wait
    request_timeout: float = 15.0
    settle_timeout: float = 60.0


async def kill_replicas(workdir: Path, database_url: str, plan: KillPlan) -> Audit:
    model = copy_model(workdir / "model", [CHAOS_MODEL])
    replicas = [
        Server(model, database_url, name=name, lease=plan.lease, log_dir=workdir)
        for name in ("replica-a", "replica-b")
    ]
    ledger = Ledger()
    kills = 0
    started = time.monotonic()
    with serving(*replicas):
        # Replicas of one deployment start together, on one build folder and one database.
        for r in replicas:
            r.start()
        await asyncio.gather(*(r.wait_ready() for r in replicas))
        done = asyncio.Event()

        async def customer(n: int) -> None:
            async with client(plan.request_timeout) as http:
                for i in itertools.count():
                    if done.is_set():
                        return
                    target = replicas[(n + i) % 2]
                    if not target.alive:
                        target = replicas[(n + i + 1) % 2]
                    ref = f"c{n}-{i}"
                    path = COMMANDS[i % len(COMMANDS)]
                    ledger.note(
                        ref, await send(http, "POST", target.base + path, json={"ref": ref})
                    )
                    if ledger.kinds[ref] != "acknowledged":
                        await asyncio.sleep(0.05)  # a dead replica: do not spin on it

        async def killer() -> None:
            nonlocal kills
            for k in range(plan.kills):
                await asyncio.sleep(plan.interval)  # the plan's pacing: load between kills
                victim = replicas[k % 2]
                victim.kill()
                kills += 1
                victim.start()
                await victim.wait_ready()
            await asyncio.sleep(plan.interval / 2)  # load on both survivors for a while
            done.set()

        await asyncio.gather(killer(), *(customer(n) for n in range(plan.clients)))
        load_seconds = time.monotonic() - started
        audit = Audit(
            ledger, await books(replicas[0].base, database_url, settle_timeout=plan.settle_timeout)
        )
    audit.extra = [
        (
            f"replicas 2, kills -9 {kills}, starts {sum(r.starts for r in replicas)}, "
            f"clients {plan.clients}, load {load_seconds:.1f}s, relay lease {plan.lease:g}s"
        ),
    ]
    return audit
