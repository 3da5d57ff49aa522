"""Calls through `resource directory { kind: api  context: Directory }` inside one deployable:
both contexts in one service (the model without deployables), so every call is served in process
by the service's own app, in the callee's own unit of work. Over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, serve
from tests.runtime.api_calls.auth import SECRET, token

MODEL = [Path(__file__).with_name("dispatch.loom")]


async def _register(client: ServiceClient, name: str) -> str:
    r = await client.post(
        "/api/commands/register", json={"name": name, "senior": False, "years": 4}
    )
    assert r.status_code == 200, r.text
    tech: str = r.json()
    return tech


async def _orders(client: ServiceClient) -> list[dict[str, Any]]:
    r = await client.get("/api/work_orders")
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


async def test_a_query_answer_arrives_typed_and_a_command_answers_its_id(database_url: str) -> None:
    async with serve(MODEL, database_url) as client:
        hired = await client.post("/api/commands/hire", json={"name": "Ada"})
        assert hired.status_code == 200, hired.text
        tech = hired.json()
        # the id Directory answered is the technician Directory stored
        info = await client.get("/api/queries/technician_info", params={"id": tech})
        assert info.json() == {
            "name": "Ada",
            "level": "Senior",
            "skills": [{"name": "general", "years": 3}],
        }
        opened = await client.post("/api/commands/open_for", json={"title": "pump", "tech": tech})
        assert opened.status_code == 200, opened.text
        order = opened.json()
        # the reaction to Opened (one transaction) called the query: the order got the name
        row = (await client.get(f"/api/work_orders/{order}")).json()
        assert row["tech"] == "Ada"

        assigned = await client.post(
            "/api/commands/assign", json={"order": order, "tech": await _register(client, "Bo")}
        )
        assert assigned.status_code == 200, assigned.text
        assert assigned.json() == "Bo"
        # a list of value objects, decoded into Directory's Skill and read field by field
        graded = await client.post("/api/commands/grade", json={"order": order, "tech": tech})
        assert graded.status_code == 204, graded.text
        row = (await client.get(f"/api/work_orders/{order}")).json()
        assert (row["tech"], row["level"], row["years"]) == ("Bo", "general", 3)
        found = await client.get("/api/queries/find", params={"name": "Bo"})
        assert found.status_code == 200, found.text
        assert found.json() != tech


async def test_the_callees_refusal_is_relayed_and_does_not_undo_the_callers_commit(
    database_url: str,
) -> None:
    async with serve(MODEL, database_url) as client:
        tech = await _register(client, "Cy")
        first = await client.post(
            "/api/commands/open_and_retire", json={"title": "one", "tech": tech}
        )
        assert first.status_code == 204, first.text
        # Cy is retired now: the state gate refuses the second retire, in Directory's own unit of
        # work; the order Dispatch committed before the call stays
        second = await client.post(
            "/api/commands/open_and_retire", json={"title": "two", "tech": tech}
        )
        body = second.json()
        assert second.status_code == 422, body
        assert body["type"] == "urn:loom:problem:state-gate-refused"
        assert body["upstream"] == "Directory"
        assert "Technician.retire" in body["detail"]
        titles = sorted(o["title"] for o in await _orders(client))
        print(f"orders after a refused call: {titles}")
        assert titles == ["one", "two"]


async def test_a_404_of_the_callee_is_relayed_with_the_same_correlation_id(
    database_url: str,
) -> None:
    async with serve(MODEL, database_url) as client:
        r = await client.get(
            "/api/queries/find", params={"name": "nobody"}, headers={"X-Correlation-Id": "c-42"}
        )
        body = r.json()
        assert r.status_code == 404, body
        assert body["type"] == "urn:loom:problem:not-found"
        assert body["upstream"] == "Directory"
        assert r.headers["x-correlation-id"] == "c-42"


async def test_the_callee_in_process_sees_the_callers_principal(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    async with serve(MODEL, database_url) as client:
        tech = await _register(client, "Di")
        plain = {"Authorization": f"Bearer {token('pat', [])}"}
        refused = await client.post(
            "/api/commands/certify_tech", json={"tech": tech}, headers=plain
        )
        body = refused.json()
        assert (refused.status_code, body["type"], body["upstream"]) == (
            403,
            "urn:loom:problem:forbidden",
            "Directory",
        )
        lead = {"Authorization": f"Bearer {token('lee', ['lead'])}"}
        certified = await client.post(
            "/api/commands/certify_tech", json={"tech": tech}, headers=lead
        )
        assert certified.status_code == 204, certified.text
        stored = (await client.get(f"/api/technicians/{tech}", headers=lead)).json()
        assert stored["certifiedBy"] == "lee"


async def test_an_idempotency_key_transaction_never_deadlocks_an_in_process_command(
    database_url: str,
) -> None:
    """A keyed request's unit of work is one transaction. On SQLite it holds the only writer
    lock from its first read or save, which Directory's command would wait for: refused at once, and
    nothing of the request is kept. On PostgreSQL the command runs in its own transaction."""
    async with serve(MODEL, database_url) as client:
        tech = await _register(client, "Fay")
        started = time.monotonic()
        r = await client.post(
            "/api/commands/open_and_retire",
            json={"title": "keyed", "tech": tech},
            headers={"Idempotency-Key": "k-1"},
        )
        took = time.monotonic() - started
        titles = [o["title"] for o in await _orders(client)]
        print(f"keyed call: {r.status_code} after {took:.2f}s, orders {titles}")
        assert took < 1.0
        if database_url.startswith("sqlite"):
            body = r.json()
            assert (r.status_code, body["type"], body["upstream"]) == (
                409,
                "urn:loom:problem:api-call-refused",
                "Directory",
            )
            assert titles == []
        else:
            assert r.status_code == 204, r.text
            assert titles == ["keyed"]
