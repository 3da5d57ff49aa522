"""A process instance's timeouts carry their `status` and `attempts`, on SQLite and PostgreSQL: an
armed one reads "armed" with no attempt, one whose handler is refused is dead-lettered (at its
first attempt: a refusal is not retried, tests/e2e/test_timeout_refusal.py) and reads "dead" with
its attempts (it used to read like a pending one)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.runtime import clock
from loom.testing import ServiceClient, serve

DESK = [Path(__file__).parent / "models/desk_refusing_timeout.loom"]
START = datetime(2030, 5, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock that moves only when told (the test runs the scheduler's rounds itself)."""

    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def now() -> Iterator[Clock]:
    c = Clock()
    clock.set_clock(c)
    yield c
    clock.reset_clock()


@pytest.fixture
async def desk(
    database_url: str, now: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    async with serve(DESK, database_url) as client:
        yield client


async def ok(r: Any) -> Any:
    assert r.status_code in (200, 204), r.text
    return r.json() if r.status_code == 200 else None


async def timeouts(c: ServiceClient, ticket: str) -> list[dict[str, Any]]:
    instance = await ok(await c.get(f"/api/workflows/follow_up/instances/{ticket}"))
    assert instance["ended"] is False
    return list(instance["timeouts"])


async def test_a_dead_lettered_timeout_reads_dead_with_its_attempts(
    desk: ServiceClient, now: Clock
) -> None:
    ticket = str(await ok(await desk.post("/api/workflows/open_ticket", json={"title": "x"})))
    due = (START + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert await timeouts(desk, ticket) == [
        {"name": "nudge", "dueAt": due, "status": "armed", "attempts": 0}
    ]
    await ok(await desk.post(f"/api/tickets/{ticket}/close"))
    seen: list[tuple[str, int]] = []
    for _ in range(20):  # each round a day later: past any backoff; bounded, not timed
        now.at += timedelta(days=1)
        await desk.service.scheduler.run_due()
        (timeout,) = await timeouts(desk, ticket)
        assert (timeout["name"], timeout["dueAt"]) == ("nudge", due)
        seen.append((timeout["status"], timeout["attempts"]))
        if timeout["status"] == "dead":
            break
    status, attempts = seen[-1]
    assert status == "dead" and attempts >= 1, seen
    # every attempt before the last left it armed, counting up
    assert seen[:-1] == [("armed", n) for n in range(1, attempts)], seen
    dead = await ok(await desk.get("/api/admin/dead-letters"))
    assert [(x["kind"], x["attempts"]) for x in dead["items"]] == [("timeout", attempts)]
    assert (await ok(await desk.get(f"/api/tickets/{ticket}")))["nudged"] == 0
