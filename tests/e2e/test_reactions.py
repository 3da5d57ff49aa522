"""Reactions in the language, over HTTP on SQLite and PostgreSQL (tests/e2e/models/reactions.loom):

- an event-triggered `create … by` loads or allocates the instance keyed by `by`;
- an `on … by` with no instance drops the event and logs `event_unrouted`;
- a reaction's own `emit` re-enters the dispatcher (a chain of three hops);
- an event is consumed in another context, by its qualified name;
- an event on a channel goes through the outbox, one that is not keeps the in-process path;
- a transactional workflow that emits, then refuses, leaves no outbox row and no consumer sees it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import column, select, table

from loom.testing import ServiceClient, serve

MODEL = [Path(__file__).resolve().parent / "models" / "reactions.loom"]
OUTBOX = table("__loom_outbox", column("event_type"), column("status"))


@pytest.fixture
async def desk(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def ticket(c: ServiceClient, email: str = "ann@example.test") -> str:
    r = await c.post("/api/tickets", json={"email": email})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def call(c: ServiceClient, path: str, body: Any = None, status: int = 204) -> Any:
    r = await c.post(path, json=body if body is not None else {})
    assert r.status_code == status, r.text
    return r.json() if r.content else None


async def get(c: ServiceClient, path: str, status: int = 200) -> Any:
    r = await c.get(path)
    assert r.status_code == status, r.text
    return r.json()


async def outbox(c: ServiceClient) -> list[tuple[str, str]]:
    async with c.service.engine.connect() as conn:
        rows = await conn.execute(select(OUTBOX.c.event_type, OUTBOX.c.status))
        return sorted((r.event_type, r.status) for r in rows)


def lines(caplog: pytest.LogCaptureFixture, fact: str) -> list[dict[str, Any]]:
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [x for x in found if x["event"] == fact]


async def test_a_starter_loads_or_allocates_its_instance(desk: ServiceClient) -> None:
    t = await ticket(desk)
    await get(desk, f"/api/workflows/follow_up/instances/{t}", 404)
    await call(desk, f"/api/tickets/{t}/resolve")
    got = await get(desk, f"/api/workflows/follow_up/instances/{t}")
    assert got == {"ticket": t, "version": 1, "resolutions": 1, "reopened": False}
    await call(desk, f"/api/tickets/{t}/reopen")
    await call(desk, f"/api/tickets/{t}/resolve")
    got = await get(desk, f"/api/workflows/follow_up/instances/{t}")
    # the same instance, loaded: its state carried over, one Survey only (the `if` skipped it)
    assert got == {"ticket": t, "version": 3, "resolutions": 2, "reopened": True}
    surveys = (await get(desk, "/api/surveys"))["items"]
    assert [s["ticket"] for s in surveys] == [t]
    # an event-triggered-only workflow has no command route; it keeps its instance route
    paths = (await get(desk, "/openapi.json"))["paths"]
    assert "/api/workflows/follow_up" not in paths
    assert "/api/workflows/follow_up/instances/{id}" in paths


async def test_an_on_without_instance_drops_the_event(
    desk: ServiceClient, caplog: pytest.LogCaptureFixture
) -> None:
    t = await ticket(desk)
    with caplog.at_level(logging.INFO, logger="loom.events"):
        await call(desk, f"/api/tickets/{t}/reopen")
    (line,) = lines(caplog, "event_unrouted")
    assert line["handler"] == "Desk.FollowUp.on(TicketReopened)"
    assert line["event_type"] == "Desk.TicketReopened"
    assert line["event_id"] and line["correlation_id"]
    assert lines(caplog, "reactor_failed") == []
    await get(desk, f"/api/workflows/follow_up/instances/{t}", 404)  # nothing allocated
    assert (await get(desk, f"/api/tickets/{t}"))["status"] == "Open"


async def test_a_failing_starter_keeps_the_command(
    desk: ServiceClient, caplog: pytest.LogCaptureFixture
) -> None:
    t = await ticket(desk, "boom@example.test")
    with caplog.at_level(logging.INFO, logger="loom.events"):
        await call(desk, f"/api/tickets/{t}/resolve")
    assert (await get(desk, f"/api/tickets/{t}"))["status"] == "Resolved"
    (failed,) = lines(caplog, "reactor_failed")
    assert failed["handler"] == "Desk.FollowUp.create(TicketResolved)"
    await get(desk, f"/api/workflows/follow_up/instances/{t}", 404)
    assert (await get(desk, "/api/surveys"))["total"] == 0
    # the other reaction to the same event, in another context, ran all the same
    credits = (await get(desk, "/api/credits"))["items"]
    assert [(x["ticket"], x["amount"]) for x in credits] == [(t, 5)]


async def test_a_reaction_emit_re_enters_the_dispatcher(
    desk: ServiceClient, caplog: pytest.LogCaptureFixture
) -> None:
    t = await ticket(desk)
    with caplog.at_level(logging.INFO, logger="loom.events"):
        await call(desk, f"/api/tickets/{t}/ping")
    hops = await get(desk, f"/api/projections/hops/{t}")
    assert (hops["count"], hops["deepest"]) == (3, 3)
    pinged = [x for x in lines(caplog, "event_dispatched") if x["event_type"] == "Desk.Pinged"]
    assert len(pinged) == 3
    # one chain: one correlation id; each hop caused by the one before
    assert len({x["correlation_id"] for x in pinged}) == 1
    assert pinged[0]["causation_id"] is None
    assert [x["causation_id"] for x in pinged[1:]] == [x["event_id"] for x in pinged[:2]]


async def test_an_event_is_consumed_in_another_context(desk: ServiceClient) -> None:
    t = await ticket(desk)
    await call(desk, f"/api/tickets/{t}/resolve")
    credits = (await get(desk, "/api/credits"))["items"]
    assert [(x["ticket"], x["amount"]) for x in credits] == [(t, 5)]


async def test_durable_and_in_process_paths(database_url: str) -> None:
    async with serve(MODEL, database_url, settle=False) as c:
        await c.service.stop_relay()  # the test drives the relay with settle()
        t = await ticket(c)
        # Not on a channel: in-process, after the commit, before the answer; no outbox row.
        await call(c, f"/api/tickets/{t}/resolve")
        assert (await get(c, f"/api/workflows/follow_up/instances/{t}"))["resolutions"] == 1
        assert await outbox(c) == []
        # On the Audit channel: an outbox row, written with the commit, delivered by the relay.
        await call(c, "/api/workflows/audit", {"ticket": t, "fail": False})
        assert await outbox(c) == [("Desk.Audited", "pending")]
        await get(c, f"/api/projections/audit_log/{t}", 404)
        await c.settle()
        assert (await get(c, f"/api/projections/audit_log/{t}"))["audits"] == 1
        assert await outbox(c) == [("Desk.Audited", "delivered")]  # `log` retention keeps it


async def test_a_refused_transaction_leaves_no_outbox_row(desk: ServiceClient) -> None:
    t = await ticket(desk)
    r = await desk.post("/api/workflows/audit", json={"ticket": t, "fail": True})
    assert r.status_code == 422 and r.json()["detail"] == "audit refused"
    assert await outbox(desk) == []  # the emit was rolled back with the write
    await get(desk, f"/api/projections/audit_log/{t}", 404)  # no consumer saw it
    assert (await get(desk, f"/api/tickets/{t}"))["touched"] == 0
    await call(desk, "/api/workflows/audit", {"ticket": t, "fail": False})
    assert (await get(desk, f"/api/projections/audit_log/{t}"))["audits"] == 1
    assert (await get(desk, f"/api/tickets/{t}"))["touched"] == 1
    page = await get(desk, "/api/projections/audit_log")
    assert [(row["ticket"], row["audits"]) for row in page["items"]] == [(t, 1)]
