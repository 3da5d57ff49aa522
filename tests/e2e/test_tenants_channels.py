"""Tenants across a durable channel, over HTTP on SQLite and PostgreSQL
(tests/e2e/models/tenants_channels.loom): two tenanted contexts in one service, `Sales.Placed`
carried through the outbox and the relay to `Ledger.Book`.

Two tenants, `acme` (A) and `globex` (B), each keep an account for the same customer. A's
placement must reach A's account only (B's, same unique key and fields, untouched), and the other
way round; the outbox row and each inbox row carry the tenant. A reaction that fails in A (A has
no account for the customer, B has one) dead-letters with A's tenant, shown to the operator
(admin role, no tenant of its own) beside it; the redrive applies it in A, never in B. B's
attempts on A's rows (ids of A's orders and accounts, on every route) are counted: each must be a
404, and none may have moved a row.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import column, select, table

from loom.testing import ServiceClient, serve
from tests.e2e.tokens import SECRET, token

MODEL = [Path(__file__).resolve().parent / "models" / "tenants_channels.loom"]
ENV = (
    "LOOM_JWT_SECRET",
    "LOOM_JWT_PUBLIC_KEY",
    "LOOM_JWT_AUDIENCE",
    "LOOM_JWT_ISSUER",
    "LOOM_TENANT_CLAIM",
)
INBOX = table("__loom_inbox", column("consumer"), column("tenant"))
OUTBOX = table("__loom_outbox", column("event_type"), column("status"), column("tenant"))


A = token(tenant="acme")
B = token(sub="bob", tenant="globex")
OPERATOR = token(sub="ops", roles=["admin"])  # no tenant: the operator of every tenant
A_ADMIN = token(sub="ann", tenant="acme", roles=["admin"])  # acme's own administrator
B_ADMIN = token(sub="bob", tenant="globex", roles=["admin"])


@pytest.fixture
async def shop(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    async with serve(MODEL, database_url) as client:
        yield client


async def ok(
    c: ServiceClient, who: dict[str, str], method: str, path: str, body: Any = None
) -> Any:
    r = await c.request(method, path, json=body, headers=who)
    assert r.status_code < 300, r.text
    return r.json() if r.content else None


async def account(c: ServiceClient, who: dict[str, str], customer: str) -> str:
    return str((await ok(c, who, "POST", "/api/accounts", {"customer": customer}))["id"])


async def place(c: ServiceClient, who: dict[str, str], customer: str, amount: int) -> str:
    order = body = {"number": f"N-{customer}-{amount}", "customer": customer, "amount": amount}
    order = (await ok(c, who, "POST", "/api/orders", body))["id"]
    await ok(c, who, "POST", f"/api/orders/{order}/place", {})
    await c.settle()
    return str(order)


async def booked(c: ServiceClient, who: dict[str, str], account_id: str) -> tuple[int, int]:
    found = await ok(c, who, "GET", f"/api/accounts/{account_id}")
    return int(found["placed"]), int(found["total"])


@dataclass
class Probe:
    """Counts tenant B's attempts on tenant A's rows, and what any of them let through."""

    foreign: set[str]
    attempts: int = 0
    leaked: list[tuple[str, int, str]] = field(default_factory=list)

    def absent(self, what: str, r: Any) -> None:
        self.attempts += 1
        if r.status_code != 404 or r.json().get("type") != "urn:loom:problem:not-found":
            self.leaked.append((what, r.status_code, r.text))

    def unseen(self, what: str, r: Any) -> None:
        self.attempts += 1
        if r.status_code != 200 or any(i in r.text for i in self.foreign):
            self.leaked.append((what, r.status_code, r.text))

    def report(self) -> None:
        print(f"cross-tenant attempts: {self.attempts}, leaked: {len(self.leaked)}")
        assert self.leaked == []


async def test_a_channel_delivers_each_tenants_event_in_that_tenant(shop: ServiceClient) -> None:
    c = shop
    mine, theirs = await account(c, A, "c1"), await account(c, B, "c1")
    a_order = await place(c, A, "c1", 10)
    assert await booked(c, A, mine) == (1, 10)
    assert await booked(c, B, theirs) == (0, 0)  # same customer, same unique key: untouched
    await place(c, B, "c1", 7)
    assert await booked(c, B, theirs) == (1, 7)
    assert await booked(c, A, mine) == (1, 10)

    # each consumer's inbox row carries the tenant it ran in
    async with c.service.engine.connect() as conn:
        rows = (await conn.execute(select(INBOX.c.consumer, INBOX.c.tenant))).all()
    assert sorted(r.tenant for r in rows) == ["acme", "globex"]
    assert {r.consumer for r in rows} == {"Ledger.Book.on(Sales.Placed)"}

    probe = Probe({mine, a_order})
    for what, method, path, body in [
        ("GET account", "GET", f"/api/accounts/{mine}", None),
        ("PATCH account", "PATCH", f"/api/accounts/{mine}", {"placed": 0}),
        ("DELETE account", "DELETE", f"/api/accounts/{mine}", None),
        ("GET order", "GET", f"/api/orders/{a_order}", None),
        ("place A's order", "POST", f"/api/orders/{a_order}/place", {}),
        ("PATCH order", "PATCH", f"/api/orders/{a_order}", {"amount": 1000}),
    ]:
        probe.absent(what, await c.request(method, path, json=body, headers=B))
    await c.settle()
    probe.unseen("list accounts", await c.get("/api/accounts", headers=B))
    probe.unseen("list orders", await c.get("/api/orders", headers=B))
    probe.report()
    assert probe.attempts == 8
    # nothing B tried moved A's rows, nor raised an event in A
    assert await booked(c, A, mine) == (1, 10)
    assert await booked(c, B, theirs) == (1, 7)


async def test_a_dead_letter_keeps_its_tenant_and_is_redriven_in_it(shop: ServiceClient) -> None:
    c = shop
    theirs = await account(c, B, "c9")  # only B has an account for c9
    await place(c, A, "c9", 5)  # A's reaction finds no account in A: dead at once
    assert await booked(c, B, theirs) == (0, 0)  # not B's account instead

    page = await ok(c, OPERATOR, "GET", "/api/admin/dead-letters")
    (dead,) = page["items"]
    assert (dead["event_type"], dead["tenant"]) == ("Sales.Placed", "acme")
    assert dead["last_error"].startswith("Ledger.Book.on(Sales.Placed): NotFound"), dead
    async with c.service.engine.connect() as conn:
        rows = (await conn.execute(select(OUTBOX.c.status, OUTBOX.c.tenant))).all()
    assert [(r.status, r.tenant) for r in rows] == [("dead", "acme")]

    # a tenant is not the operator: the admin routes are refused, whatever the tenant
    r = await c.get("/api/admin/dead-letters", headers=A)
    assert r.status_code == 403, r.text
    r = await c.post(f"/api/admin/dead-letters/{dead['event_id']}/redrive", headers=B)
    assert r.status_code == 403, r.text

    # a tenant's own administrator sees, and redrives, that tenant's dead letters only
    page = await ok(c, B_ADMIN, "GET", "/api/admin/dead-letters")
    assert (page["items"], page["total"]) == ([], 0)
    r = await c.post(f"/api/admin/dead-letters/{dead['event_id']}/redrive", headers=B_ADMIN)
    assert r.status_code == 404, r.text  # another tenant's: as if there were none
    page = await ok(c, A_ADMIN, "GET", "/api/admin/dead-letters")
    assert [d["event_id"] for d in page["items"]] == [dead["event_id"]] and page["total"] == 1
    print("tenant admins: globex sees 0 of acme's dead letters and cannot redrive it (404)")

    mine = await account(c, A, "c9")
    await ok(c, OPERATOR, "POST", f"/api/admin/dead-letters/{dead['event_id']}/redrive")
    await c.settle()
    assert await booked(c, A, mine) == (1, 5)  # replayed in A, as the operator is in none
    assert await booked(c, B, theirs) == (0, 0)
    assert (await ok(c, OPERATOR, "GET", "/api/admin/dead-letters"))["items"] == []
