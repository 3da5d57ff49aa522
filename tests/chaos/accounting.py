"""After the chaos: what was stored, what its events did, and what is left in the outbox.

Each `place` / `placeAuto` / `placeEmit` of tests/chaos/models/chaos.loom stores one Job and commits one Placed
event with it; the reaction to Placed stores one Applied row naming the Job, with no unique key. So
per Job, the number of Applied rows is the number of times the reaction was applied: 1, or a double
(2+), or missing (0). An Applied row naming no stored Job is an event of a write that never
committed."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

from .load import ACKNOWLEDGED, REFUSED, UNKNOWN, Ledger, status_line
from .servers import get_all, outbox_counts

# The durable commands: each stores one Job under the `ref` it is given.
COMMANDS = ("/api/workflows/place", "/api/workflows/place_auto", "/api/workflows/place_emit")


@dataclass
class Books:
    stored: dict[str, str]  # ref -> job id
    applications: Counter[str]  # job id -> Applied rows
    outbox: dict[str, int]
    dead_letters: int
    settle_seconds: float

    def doubles(self) -> dict[str, int]:
        return {job: n for job, n in self.applications.items() if n > 1}

    def missing(self) -> set[str]:
        return {job for job in self.stored.values() if self.applications[job] == 0}

    def orphans(self) -> set[str]:
        return set(self.applications) - set(self.stored.values())


async def settle(database_url: str, timeout: float) -> float:
    """Until the outbox has no pending row (the replicas delivered everything, leases of killed
    relays included), at most `timeout` seconds; answers how long it took."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if (await outbox_counts(database_url))["pending"] == 0:
            break
        await asyncio.sleep(0.5)  # a measured wait: it answers how long, the caller judges
    return time.monotonic() - started


async def books(base: str, database_url: str, *, settle_timeout: float) -> Books:
    seconds = await settle(database_url, settle_timeout)
    async with httpx.AsyncClient(timeout=30) as c:
        jobs = await get_all(c, base, "/api/jobs")
        applied = await get_all(c, base, "/api/applieds")
        r = await c.get(f"{base}/api/admin/dead-letters", params={"limit": 1})
        r.raise_for_status()
        dead = int(r.json()["total"])
    return Books(
        stored={j["ref"]: j["id"] for j in jobs},
        applications=Counter(a["job"] for a in applied),
        outbox=await outbox_counts(database_url),
        dead_letters=dead,
        settle_seconds=seconds,
    )


@dataclass
class Audit:
    """The ledger of what clients were told, against the books of what the database holds."""

    ledger: Ledger
    books: Books
    extra: list[str] = field(default_factory=list)

    @property
    def acknowledged(self) -> set[str]:
        return self.ledger.keys(ACKNOWLEDGED)

    @property
    def lost(self) -> set[str]:
        """Acknowledged, yet not stored: a broken promise."""
        return self.acknowledged - set(self.books.stored)

    @property
    def refused_but_stored(self) -> set[str]:
        """The client was told no (or its request never got through), yet it was stored."""
        return self.ledger.keys(REFUSED) & set(self.books.stored)

    @property
    def unknown_stored(self) -> set[str]:
        """Stored although the client could not know: the connection broke, or a 503."""
        return self.ledger.keys(UNKNOWN) & set(self.books.stored)

    def lines(self, title: str) -> list[str]:
        b = self.books
        applied = sum(b.applications.values())
        return [
            f"{title}",
            *[f"  {line}" for line in self.extra],
            f"  requests: {self.ledger.sent} ({status_line(self.ledger.labels)})",
            (
                f"  acknowledged {len(self.acknowledged)}, stored {len(b.stored)}, "
                f"stored - acknowledged {len(b.stored) - len(self.acknowledged)} "
                f"(unknown outcomes sent {len(self.ledger.keys(UNKNOWN))}, of them stored "
                f"{len(self.unknown_stored)}); acknowledged but lost {len(self.lost)}, "
                f"refused but stored {len(self.refused_but_stored)}"
            ),
            (
                f"  events committed {len(b.stored)}, reactions applied {applied}: doubles "
                f"{len(b.doubles())}, missing {len(b.missing())}, of no stored write "
                f"{len(b.orphans())}"
            ),
            (
                f"  outbox after {b.settle_seconds:.1f}s: {b.outbox}; dead letters (HTTP) "
                f"{b.dead_letters}"
            ),
        ]

    def problems(self) -> list[str]:
        """Every broken promise, in words; empty when the run kept them all."""
        b = self.books
        found = []
        if self.lost:
            found.append(f"acknowledged but not stored: {sorted(self.lost)[:10]}")
        if self.refused_but_stored:
            found.append(f"refused but stored: {sorted(self.refused_but_stored)[:10]}")
        if b.doubles():
            found.append(f"reactions applied twice or more: {list(b.doubles().items())[:10]}")
        if b.missing():
            found.append(f"committed events never applied: {sorted(b.missing())[:10]}")
        if b.orphans():
            found.append(f"reactions to writes that were not stored: {sorted(b.orphans())[:10]}")
        if b.outbox.get("pending", 0) or b.outbox.get("dead", 0) or b.dead_letters:
            found.append(f"outbox not drained: {b.outbox}, dead letters {b.dead_letters}")
        return found
