"""Tenants over HTTP, on SQLite and PostgreSQL (tests/e2e/models/tenants.loom): a hostile tenant.

Two tenants, `acme` (A) and `globex` (B), each a token's `tenant` claim. B tries every way to
reach A's invoices: A's ids on the aggregate's GET, PATCH, DELETE and operation routes, command
handlers by id, by unique key (`getBy`) and by criterion, queries by key, by find, by criterion
and by retrieval, the list, and A's idempotency key replayed (by a user with A's subject, in B).
Every attempt must find nothing: a 404 exactly like an unknown id (never 200, never 403, which
would tell the row exists), or a list without A's rows. Each is counted and the counts printed;
afterwards A reads its rows as they were (no cross-tenant write either).

Also: the same unique key in both tenants; anonymous is a 401 and a token without a tenant (no
claim, "", a number) a 403 on every kind of route; `currentUser.tenant` in a gate and a body;
LOOM_TENANT_CLAIM names another claim; a tenanted model without authentication refuses to start.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loom.runtime import AuthConfigError
from loom.testing import ServiceClient, serve
from tests.e2e.tokens import SECRET, token

MODEL = [Path(__file__).resolve().parent / "models" / "tenants.loom"]
ENV = (
    "LOOM_JWT_SECRET",
    "LOOM_JWT_PUBLIC_KEY",
    "LOOM_JWT_AUDIENCE",
    "LOOM_JWT_ISSUER",
    "LOOM_TENANT_CLAIM",
)


A = token(tenant="acme")
B = token(sub="bob", tenant="globex")
B_AS_ANN = token(tenant="globex")  # A's user's subject, in tenant B: idempotency keys differ


@pytest.fixture
async def billing(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    async with serve(MODEL, database_url) as client:
        yield client


def problem(r: Any, status: int, kind: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = dict(r.json())
    assert body["type"] == f"urn:loom:problem:{kind}", body
    return body


async def create(c: ServiceClient, who: dict[str, str], number: str, **fields: Any) -> str:
    r = await c.post("/api/invoices", json={"number": number, **fields}, headers=who)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@dataclass
class Probe:
    """Counts tenant B's attempts on tenant A's rows, and what any of them let through."""

    foreign: set[str]  # A's ids
    attempts: int = 0
    leaked: list[tuple[str, int, str]] = field(default_factory=list)

    def absent(self, what: str, r: Any) -> None:
        """A's row must look like no row: a 404 `not-found` (naming at most the id B sent, as
        for an id nobody has), never 200 nor 403."""
        self.attempts += 1
        if r.status_code != 404 or r.json().get("type") != "urn:loom:problem:not-found":
            self.leaked.append((what, r.status_code, r.text))

    def unseen(self, what: str, r: Any) -> None:
        """A read of many answers none of A's rows."""
        self.attempts += 1
        if r.status_code != 200 or any(i in r.text for i in self.foreign):
            self.leaked.append((what, r.status_code, r.text))


async def test_a_tenant_reaches_no_row_of_another(billing: ServiceClient) -> None:
    c = billing
    a1 = await create(c, A, "INV-1", customer="c1", amount=150)
    a2 = await create(c, A, "INV-2", customer="c1", amount=5)
    # the same unique key in the other tenant: its own row, not a 409
    b1 = await create(c, B, "INV-1", customer="c2", amount=150)
    # and the key is still unique within a tenant
    r = await c.post("/api/invoices", json={"number": "INV-1"}, headers=B)
    problem(r, 409, "duplicate-key")
    probe = Probe({a1, a2})

    for a in (a1, a2):
        probe.absent("GET by id", await c.get(f"/api/invoices/{a}", headers=B))
        probe.absent("PATCH", await c.patch(f"/api/invoices/{a}", json={"amount": 0}, headers=B))
        probe.absent("DELETE", await c.delete(f"/api/invoices/{a}", headers=B))
        probe.absent("operation pay", await c.post(f"/api/invoices/{a}/pay", json={}, headers=B))
        probe.absent(
            "operation bump",
            await c.post(f"/api/invoices/{a}/bump", json={"by": 1000}, headers=B),
        )
        # B's own tenant passes the gate: the row is then not found
        probe.absent(
            "operation stamp",
            await c.post(f"/api/invoices/{a}/stamp", json={"t": "globex"}, headers=B),
        )
        probe.absent(
            "command by id",
            await c.post("/api/commands/pay_by_id", json={"invoice": a}, headers=B),
        )
        probe.absent(
            "command stamp by id",
            await c.post("/api/commands/stamp_mine", json={"invoice": a}, headers=B),
        )
    # INV-2 and customer c1 exist in A only
    probe.absent(
        "command getBy key",
        await c.post("/api/commands/pay_number", json={"number": "INV-2"}, headers=B),
    )
    probe.absent(
        "command delete by key",
        await c.post("/api/commands/purge", json={"number": "INV-2"}, headers=B),
    )
    probe.absent("query getBy key", await c.get("/api/queries/by_number?number=INV-2", headers=B))
    probe.absent(
        "command by criterion",
        await c.post("/api/commands/pay_first_open", json={"customer": "c1"}, headers=B),
    )
    probe.unseen("list", await c.get("/api/invoices?limit=200", headers=B))
    probe.unseen("find route", await c.get("/api/invoices/find/by_customer?customer=c1", headers=B))
    probe.unseen("query find", await c.get("/api/queries/of_customer?customer=c1", headers=B))
    probe.unseen("query criterion", await c.get("/api/queries/open_of?customer=c1", headers=B))
    probe.unseen("query retrieval", await c.get("/api/queries/large_ones", headers=B))
    probe.unseen(
        "query getBy shared key", await c.get("/api/queries/by_number?number=INV-1", headers=B)
    )

    # A's idempotency key, replayed with the same request by A's subject in tenant B: applied
    # afresh in B, never answered with A's recorded response
    key = {"Idempotency-Key": "same-key-in-two-tenants"}
    body = {"number": "INV-K", "customer": "c9"}
    r = await c.post("/api/invoices", json=body, headers={**A, **key})
    assert r.status_code == 201, r.text
    ak = str(r.json()["id"])
    probe.foreign.add(ak)
    r = await c.post("/api/invoices", json=body, headers={**B_AS_ANN, **key})
    bk = str(r.json().get("id"))
    probe.attempts += 1
    if r.status_code != 201 or "Idempotent-Replayed" in r.headers or ak in r.text:
        probe.leaked.append(("idempotency key replay", r.status_code, r.text))
    # ... while A's own retry is the replay
    r = await c.post("/api/invoices", json=body, headers={**A, **key})
    assert r.headers.get("Idempotent-Replayed") == "true" and r.json()["id"] == ak, r.text

    print(f"cross-tenant attempts: {probe.attempts}, leaked: {len(probe.leaked)}")
    assert probe.leaked == [], "\n".join(map(str, probe.leaked))
    assert probe.attempts == 27

    # B sees its own rows: the list, the shared key, the criterion
    page = (await c.get("/api/invoices", headers=B)).json()
    assert page["total"] == 2 and {i["id"] for i in page["items"]} == {b1, bk}
    r = await c.get("/api/queries/by_number?number=INV-1", headers=B)
    assert r.status_code == 200 and r.json()["id"] == b1, r.text
    large = (await c.get("/api/queries/large_ones", headers=B)).json()
    assert [i["id"] for i in large] == [b1]

    # Nothing B did wrote to A: A's rows are as A left them, and all there
    r = await c.get(f"/api/invoices/{a1}", headers=A)
    assert r.status_code == 200, r.text
    got = r.json()
    assert (got["amount"], got["status"], got["stampedFor"]) == (150, "Open", ""), got
    r = await c.get(f"/api/invoices/{a2}", headers=A)
    assert r.status_code == 200 and r.json()["status"] == "Open", r.text
    page = (await c.get("/api/invoices", headers=A)).json()
    assert page["total"] == 3 and {i["id"] for i in page["items"]} == {a1, a2, ak}
    # and A reaches its own through the same routes
    r = await c.post("/api/commands/pay_number", json={"number": "INV-2"}, headers=A)
    assert r.status_code == 200 and r.json() == a2, r.text
    r = await c.get("/api/queries/by_number?number=INV-1", headers=A)
    assert r.json()["id"] == a1


async def test_current_user_tenant(billing: ServiceClient) -> None:
    c = billing
    a = await create(c, A, "INV-1")
    r = await c.get("/api/queries/my_tenant", headers=A)
    assert r.status_code == 200 and r.json() == "acme", r.text
    # the gate `requires currentUser.tenant == t`: another tenant's name is refused (403) ...
    r = await c.post(f"/api/invoices/{a}/stamp", json={"t": "globex"}, headers=A)
    problem(r, 403, "forbidden")
    # ... its own passes, and a body stores it
    r = await c.post("/api/commands/stamp_mine", json={"invoice": a}, headers=A)
    assert r.status_code in (200, 204), r.text
    assert (await c.get(f"/api/invoices/{a}", headers=A)).json()["stampedFor"] == "acme"


async def test_a_caller_without_a_tenant_is_refused(billing: ServiceClient) -> None:
    c = billing
    a = await create(c, A, "INV-1")
    routes = [
        ("GET", "/api/invoices", None),
        ("GET", f"/api/invoices/{a}", None),
        ("POST", "/api/invoices", {"number": "X"}),
        ("PATCH", f"/api/invoices/{a}", {"amount": 1}),
        ("DELETE", f"/api/invoices/{a}", None),
        ("POST", f"/api/invoices/{a}/pay", {}),
        ("POST", "/api/commands/pay_by_id", {"invoice": a}),
        ("GET", "/api/queries/my_tenant", None),
    ]
    no_tenant = [token(), token(tenant=""), token(tenant=42), token(tenant=["acme"])]
    for method, path, body in routes:
        r = await c.request(method, path, json=body)
        problem(r, 401, "unauthenticated")
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        for who in no_tenant:
            problem(await c.request(method, path, json=body, headers=who), 403, "forbidden")
    # the untenanted context stays open to anyone
    r = await c.post("/api/products", json={"name": "p"})
    assert r.status_code == 201, r.text
    # nothing the refused requests did was kept
    got = (await c.get(f"/api/invoices/{a}", headers=A)).json()
    assert (got["amount"], got["status"]) == (0, "Open")
    assert (await c.get("/api/invoices", headers=A)).json()["total"] == 1


async def test_the_tenant_claim_is_configurable(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    monkeypatch.setenv("LOOM_TENANT_CLAIM", "org")
    async with serve(MODEL, database_url) as c:
        r = await c.post("/api/invoices", json={"number": "1"}, headers=token(org="acme"))
        assert r.status_code == 201, r.text
        r = await c.get("/api/queries/my_tenant", headers=token(org="acme"))
        assert r.json() == "acme"
        # the `tenant` claim is no longer read
        body = problem(await c.get("/api/invoices", headers=A), 403, "forbidden")
        assert "`org`" in body["detail"]
        # and tenant `acme` of claim `org` sees the row
        page = (await c.get("/api/invoices", headers=token(org="acme"))).json()
        assert page["total"] == 1


async def test_a_tenanted_model_needs_authentication(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(AuthConfigError, match="context Billing is tenanted"):
        async with serve(MODEL, database_url):
            pass


async def test_a_reactor_chain_runs_in_the_tenant_of_its_event(billing: ServiceClient) -> None:
    """Paying an invoice raises InvoicePaid: Issue creates a Receipt and raises Receipted, and
    Touch touches the customer's open invoices, each as the system principal of the payer's
    tenant. The other tenant has invoices of the same customer and the same numbers: none is
    touched, and no receipt of the chain lands in it."""
    c = billing
    a_paid = await create(c, A, "P-1", customer="shared")
    a_open = await create(c, A, "P-2", customer="shared")
    b_open = [await create(c, B, n, customer="shared") for n in ("P-1", "P-2", "P-3")]

    r = await c.post(f"/api/invoices/{a_paid}/pay", json={}, headers=A)
    assert r.status_code == 204, r.text
    receipts = (await c.get("/api/receipts", headers=A)).json()
    assert [(x["invoice"], x["customer"]) for x in receipts["items"]] == [(a_paid, "shared")]
    touched = (await c.get(f"/api/invoices/{a_open}", headers=A)).json()
    assert touched["touches"] == 1, touched

    # what the chain in A could have reached in B: its receipts, and its invoices of the customer
    attempts, leaked = 0, []
    attempts += 1
    theirs = (await c.get("/api/receipts", headers=B)).json()
    if theirs["total"] != 0:
        leaked.append(("receipt in B", theirs))
    for b in b_open:
        attempts += 1
        got = (await c.get(f"/api/invoices/{b}", headers=B)).json()
        if got["touches"] != 0 or got["status"] != "Open":
            leaked.append(("invoice of B touched", got))

    # and the other way round: B's chain touches B's open invoices only
    r = await c.post(f"/api/invoices/{b_open[0]}/pay", json={}, headers=B)
    assert r.status_code == 204, r.text
    assert [(await c.get(f"/api/invoices/{b}", headers=B)).json()["touches"] for b in b_open] == [
        0,
        1,
        1,
    ]
    attempts += 2
    mine = (await c.get("/api/receipts", headers=A)).json()
    if mine["total"] != 1:
        leaked.append(("receipt of B in A", mine))
    got = (await c.get(f"/api/invoices/{a_open}", headers=A)).json()
    if got["touches"] != 1:
        leaked.append(("invoice of A touched by B's chain", got))
    print(f"cross-tenant attempts: {attempts}, leaked: {len(leaked)}")
    assert leaked == []
