"""`requires` on every entry point over HTTP, on SQLite and PostgreSQL
(tests/e2e/models/entry_gates.loom): a factory (through the crudish POST), a workflow's command
`create`, a commandHandler and a queryHandler each answer 403 `forbidden` with the gate's rule to
a caller it refuses, having written nothing, and run for a caller it admits; a reaction creates
through the gated factory as the system principal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loom.testing import ServiceClient, serve
from tests.e2e.test_principal import problem
from tests.e2e.tokens import token, use_secret
from tests.waiting import until

MODEL = [Path(__file__).resolve().parent / "models" / "entry_gates.loom"]
WRITER = token(roles=["writer"])
CLERK = token(roles=["clerk"])
FACTORY_RULE = 'Policy.create: requires currentUser.isSystem || currentUser.hasRole("writer")'


@pytest.fixture
async def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve(MODEL, database_url) as client:
        yield client


async def policies(c: ServiceClient) -> list[tuple[str, str]]:
    r = await c.get("/api/policies", headers=WRITER)
    assert r.status_code == 200, r.text
    return sorted((p["holder"], p["source"]) for p in r.json()["items"])


async def test_factory_gate(desk: ServiceClient) -> None:
    c = desk
    for headers in ({}, CLERK):
        r = await c.post("/api/policies", json={"holder": "ann", "source": "x"}, headers=headers)
        body = problem(r, 403, "forbidden")
        assert body["rule"] == FACTORY_RULE
    assert await policies(c) == []
    r = await c.post("/api/policies", json={"holder": "ann", "source": "x"}, headers=WRITER)
    assert r.status_code == 201, r.text
    assert await policies(c) == [("ann", "x")]


async def test_workflow_create_gate(desk: ServiceClient) -> None:
    c = desk
    rule = 'workflow Issue: requires currentUser.hasRole("writer") && c.holder != "vip"'
    # the gate reads the payload: a writer may not issue for "vip"
    for headers, holder in ((CLERK, "bob"), (WRITER, "vip"), ({}, "bob")):
        r = await c.post("/api/workflows/issue", json={"holder": holder}, headers=headers)
        assert problem(r, 403, "forbidden")["rule"] == rule
    assert await policies(c) == []
    r = await c.post("/api/workflows/issue", json={"holder": "bob"}, headers=WRITER)
    assert r.status_code == 200, r.text
    assert await policies(c) == [("bob", "workflow")]


async def test_handler_gates(desk: ServiceClient) -> None:
    c = desk
    r = await c.post("/api/commands/renew", json={"holder": "cy"})
    assert problem(r, 403, "forbidden")["rule"] == (
        "commandHandler Renew: requires currentUser.isAuthenticated"
    )
    # a clerk passes the handler's gate, not the factory's it runs: still nothing written
    r = await c.post("/api/commands/renew", json={"holder": "cy"}, headers=CLERK)
    assert problem(r, 403, "forbidden")["rule"] == FACTORY_RULE
    assert await policies(c) == []
    r = await c.post("/api/commands/renew", json={"holder": "cy"}, headers=WRITER)
    assert r.status_code == 200, r.text
    assert await policies(c) == [("cy", "handler")]
    # a query handler's gate is checked before it reads
    r = await c.get("/api/queries/holders", params={"holder": "cy"}, headers=WRITER)
    assert problem(r, 403, "forbidden")["rule"] == (
        'queryHandler Holders: requires currentUser.hasRole("auditor")'
    )
    auditor = token(roles=["auditor"])
    r = await c.get("/api/queries/holders", params={"holder": "cy"}, headers=auditor)
    assert r.status_code == 200, r.text
    assert r.json() == 1


async def test_reaction_creates_through_the_gate_as_the_system(desk: ServiceClient) -> None:
    c = desk
    r = await c.post("/api/quotes", json={"holder": "dee"}, headers=CLERK)
    assert r.status_code == 201, r.text
    r = await c.post(f"/api/quotes/{r.json()['id']}/accept", json={}, headers=CLERK)
    assert r.status_code == 204, r.text
    got = await until(lambda: policies(c), timeout=10, what="the reaction created a policy")
    assert got == [("dee", "reaction")]
