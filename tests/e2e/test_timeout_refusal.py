"""A timeout whose handler is refused (its `when` gate, `Ticket.nudge() when !closed`, over a
ticket closed first) is dead-lettered at its first firing, on SQLite and PostgreSQL: a refusal is
the model's decision over the state the handler read, made again on every retry, so it skips the
backoff (tests/e2e/models/desk_refusing_timeout.loom, through the real scheduler round)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from loom.testing import ServiceClient
from tests.e2e.test_timeout_status import START, Clock, desk, now, ok, timeouts

__all__ = ["desk", "now"]  # the fixtures, shared with test_timeout_status


async def test_a_refused_timeout_is_dead_at_its_first_firing(
    desk: ServiceClient, now: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    ticket = str(await ok(await desk.post("/api/workflows/open_ticket", json={"title": "x"})))
    await ok(await desk.post(f"/api/tickets/{ticket}/close"))
    now.at = START + timedelta(hours=1)  # due now: one round fires it
    caplog.set_level("INFO", logger="loom.events")
    await desk.service.scheduler.run_due()
    (timeout,) = await timeouts(desk, ticket)
    assert (timeout["status"], timeout["attempts"]) == ("dead", 1)
    facts = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    kinds = [f.get("event") for f in facts]
    assert "timeout_dead_lettered" in kinds and "timeout_retry_scheduled" not in kinds, facts
    dead = await ok(await desk.get("/api/admin/dead-letters"))
    (item,) = dead["items"]
    assert item["attempts"] == 1 and "(when !closed)" in item["last_error"], item
    # nothing is left to fire: a later round finds no due timeout
    now.at += timedelta(days=1)
    await desk.service.scheduler.run_due()
    assert [(t["status"], t["attempts"]) for t in await timeouts(desk, ticket)] == [("dead", 1)]
