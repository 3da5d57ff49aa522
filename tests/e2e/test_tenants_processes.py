"""Tenants and the scheduler (docs/language.md#tenants), over HTTP on SQLite and PostgreSQL with a
virtual clock (tests/e2e/models/tenants_processes.loom): a context timer of a tenanted context
runs once per tenant that has rows, each as the system principal of that tenant in a unit of work
of its own, so its sweep finds and marks that tenant's overdue rows only; one tenant's failing run
rolls back alone and the other tenants' runs still commit; an operator's fire runs every tenant's.

Two tenants, `acme` (A) and `globex` (B), with the same loan numbers. Every row is checked after
each tick (marked exactly when it is overdue in its own tenant, once per tick), and each tenant
tries the other's ids (404): `cross-tenant attempts: N, leaked: 0`."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.tokens import token, use_secret

MODEL = [Path(__file__).resolve().parent / "models" / "tenants_processes.loom"]
START = datetime(2030, 5, 6, 9, 0, tzinfo=UTC)
TIMER = "Lending.markOverdue"


A = token(tenant="acme")
B = token(sub="bob", tenant="globex")
C = token(sub="cy", tenant="initech")  # a borrower, no loans
OPERATOR = token(sub="ops", roles=["admin"])


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def lending(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve(MODEL, database_url, clock=clock) as client:
        yield client


async def loan(c: ServiceClient, who: dict[str, str], number: str, due: datetime) -> str:
    r = await c.post("/api/loans", json={"number": number, "dueAt": _iso(due)}, headers=who)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@dataclass
class Ledger:
    """What each tenant's rows must look like, and every way one tenant's rows could leak."""

    c: ServiceClient
    rows: dict[str, tuple[dict[str, str], str]] = field(default_factory=dict)  # id -> (who, no)
    attempts: int = 0
    leaked: list[tuple[str, Any]] = field(default_factory=list)

    async def add(self, who: dict[str, str], number: str, due: datetime) -> str:
        id_ = await loan(self.c, who, number, due)
        self.rows[id_] = (who, number)
        return id_

    async def check(self, sweeps: dict[str, int]) -> None:
        """Each row, read by its own tenant, has been swept `sweeps[id]` times (0 if absent);
        the other tenant's read of it is a 404, and its list holds none of it."""
        for id_, (who, number) in self.rows.items():
            other = B if who is A else A
            await self.absent_for(C, id_)
            r = await self.c.get(f"/api/loans/{id_}", headers=who)
            assert r.status_code == 200, r.text
            expected = sweeps.get(id_, 0)
            if (r.json()["sweeps"], r.json()["overdue"]) != (expected, expected > 0):
                self.leaked.append((f"{number} swept wrongly", r.json()))
            await self.absent_for(other, id_)
            self.attempts += 1
            r = await self.c.get("/api/loans", headers=other)
            if r.status_code != 200 or id_ in r.text:
                self.leaked.append((f"{number} listed to the other tenant", r.text))

    async def absent_for(self, who: dict[str, str], id_: str) -> None:
        self.attempts += 1
        r = await self.c.get(f"/api/loans/{id_}", headers=who)
        if r.status_code != 404:
            self.leaked.append((f"{id_} read by another tenant", r.text))

    def report(self) -> None:
        print(f"cross-tenant attempts: {self.attempts}, leaked: {len(self.leaked)}")
        assert self.attempts > 0
        assert not self.leaked, self.leaked


def ticks(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [x for x in found if x["event"] == event and x.get("timer") == TIMER]


async def test_a_context_timer_sweeps_each_tenant_in_its_own_run(
    lending: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    ledger = Ledger(lending)
    late, later = START + timedelta(minutes=30), START + timedelta(hours=5)
    a1 = await ledger.add(A, "L-1", late)
    a2 = await ledger.add(A, "L-2", later)
    b1 = await ledger.add(B, "L-1", late)  # the same numbers in both tenants
    b2 = await ledger.add(B, "L-2", later)
    r = await lending.post("/api/borrowers", json={"name": "Cy"}, headers=C)
    assert r.status_code == 201, r.text
    await ledger.check({})

    await clock.advance(timedelta(hours=1))  # the first tick: L-1 is overdue in A and B
    runs = ["acme", "globex", "initech"]
    assert [x["tenant"] for x in ticks(caplog, "tick_run")] == runs
    await ledger.check({a1: 1, b1: 1})

    b3 = await ledger.add(B, "L-3", START)  # B only: A's run finds nothing more
    await clock.advance(timedelta(hours=1))
    await ledger.check({a1: 1, b1: 1, b3: 1})
    assert [x["tenant"] for x in ticks(caplog, "tick_run")] == runs * 2

    await clock.advance(timedelta(hours=4))  # L-2 too, each in its own tenant's run
    await ledger.check({a1: 1, b1: 1, b3: 1, a2: 1, b2: 1})
    assert not ticks(caplog, "tick_failed")
    ledger.report()


async def test_one_tenants_failing_run_does_not_stop_the_others(
    lending: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    ledger = Ledger(lending)
    late = START + timedelta(minutes=30)
    await ledger.add(A, "BOOM", late)  # A's sweep fails on it, and rolls back A's L-1 with it
    await ledger.add(A, "L-1", late)
    b1 = await ledger.add(B, "L-1", late)
    b2 = await ledger.add(B, "L-2", late)
    await clock.advance(timedelta(hours=1))
    failed = ticks(caplog, "tick_failed")
    assert [x["tenant"] for x in failed] == ["acme"]
    assert [x["tenant"] for x in ticks(caplog, "tick_run")] == ["globex"]
    await ledger.check({b1: 1, b2: 1})
    ledger.report()


async def test_an_operators_fire_runs_every_tenants_sweep(
    lending: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The admin timer routes are an operator's (role `admin`, no tenant needed): a context timer
    is listed once, and firing it runs it once per tenant, each in that tenant only."""
    caplog.set_level(logging.INFO, logger="loom.events")
    ledger = Ledger(lending)
    a1 = await ledger.add(A, "L-1", START - timedelta(minutes=1))
    b1 = await ledger.add(B, "L-1", START - timedelta(minutes=1))
    await ledger.add(B, "L-2", START + timedelta(days=1))
    r = await lending.get("/api/admin/timers", headers=OPERATOR)
    assert r.status_code == 200, r.text
    assert [i["timer"] for i in r.json()["items"] if i["kind"] == "timer"] == [TIMER]
    # a tenant's administrator neither sees nor fires it: it runs for every tenant
    tenant_admin = token(sub="ann", tenant="acme", roles=["admin"])
    r = await lending.get("/api/admin/timers", headers=tenant_admin)
    assert [i for i in r.json()["items"] if i["kind"] == "timer"] == []
    r = await lending.post(f"/api/admin/timers/{TIMER}/fire", headers=tenant_admin)
    assert r.status_code == 404, r.text
    assert ticks(caplog, "tick_run") == []
    r = await lending.post(f"/api/admin/timers/{TIMER}/fire", headers=OPERATOR)
    assert r.status_code == 200, r.text
    assert r.json()["outcome"] == "fired"
    assert [x["tenant"] for x in ticks(caplog, "tick_run")] == ["acme", "globex"]
    await ledger.check({a1: 1, b1: 1})
    ledger.report()
