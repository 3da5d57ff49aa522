"""Operators' timer routes over HTTP, on SQLite and PostgreSQL (docs/processes.md, "Timers for
operators"), on a model with a timeout and a context timer and no channel:

- the dead-letter routes are mounted (they were not without a channel);
- `GET /api/admin/timers` lists the armed timeouts and the context timers with their due time;
- `POST /api/admin/timers/{id}/fire` fires a timeout (its job id) or a context timer (its name)
  now, once: fired while the scheduler fires the same timeout, the handler runs exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.runtime import clock
from loom.testing import ServiceClient, serve

DESK = [Path(__file__).parent / "models/desk_timers.loom"]
START = datetime(2030, 5, 1, 9, 0, tzinfo=UTC)


class Clock:
    """A clock that moves only when told, and runs nothing on the way (the test drives the
    scheduler itself)."""

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
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the test fires, or runs the scheduler's round
    async with serve(DESK, database_url) as client:
        yield client


async def ok(r: Any) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


async def open_ticket(c: ServiceClient) -> str:
    return str(await ok(await c.post("/api/workflows/open_ticket", json={"title": "printer"})))


async def timers(c: ServiceClient) -> list[dict[str, Any]]:
    page = await ok(await c.get("/api/admin/timers"))
    assert page["total"] == len(page["items"])
    return list(page["items"])


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


async def test_admin_routes_without_a_channel(desk: ServiceClient) -> None:
    page = await ok(await desk.get("/api/admin/dead-letters"))
    assert page["items"] == [] and page["total"] == 0
    paths = (await ok(await desk.get("/openapi.json")))["paths"]
    assert {"/api/admin/dead-letters", "/api/admin/timers", "/api/admin/timers/{id}/fire"} <= set(
        paths
    )


async def test_list_and_fire_a_timeout(desk: ServiceClient, now: Clock) -> None:
    t = await open_ticket(desk)
    listed = await timers(desk)
    assert [(x["kind"], x.get("timeout"), x.get("timer"), x["due_at"]) for x in listed] == [
        ("timeout", "nudge", None, iso(START + timedelta(hours=1))),
        ("timer", None, "Desk.sweep", iso(START + timedelta(hours=1))),
    ]
    job = listed[0]
    assert (job["process"], job["key"], job["attempts"]) == ("Desk.FollowUp", t, 0)
    now.at = START + timedelta(minutes=5)  # not due yet: fired anyway
    fired = await ok(await desk.post(f"/api/admin/timers/{job['job_id']}/fire"))
    assert fired == {"id": job["job_id"], "kind": "timeout", "outcome": "fired"}
    follow_up = await ok(await desk.get(f"/api/workflows/follow_up/instances/{t}"))
    assert (follow_up["nudges"], follow_up["ended"], follow_up["timeouts"]) == (1, True, [])
    assert (await ok(await desk.get(f"/api/tickets/{t}")))["nudged"] == 1
    assert [x["kind"] for x in await timers(desk)] == ["timer"]
    # consumed: firing it again finds nothing, and so does the scheduler
    r = await desk.post(f"/api/admin/timers/{job['job_id']}/fire")
    assert r.status_code == 404, r.text
    assert r.json()["type"] == "urn:loom:problem:not-found"
    now.at = START + timedelta(hours=2)
    assert await desk.service.scheduler.run_due() == 1  # the sweep only
    assert (await ok(await desk.get(f"/api/tickets/{t}")))["nudged"] == 1


async def test_fire_a_context_timer(desk: ServiceClient, now: Clock) -> None:
    await timers(desk)  # the timer's row exists from the first look on
    t = await open_ticket(desk)
    now.at = START + timedelta(minutes=10)
    fired = await ok(await desk.post("/api/admin/timers/Desk.sweep/fire"))
    assert fired == {"id": "Desk.sweep", "kind": "timer", "outcome": "fired"}
    assert (await ok(await desk.get(f"/api/tickets/{t}")))["nudged"] == 1
    sweep = [x for x in await timers(desk) if x["kind"] == "timer"]
    # the next tick comes `every` from the fired one
    assert [(x["due_at"], x["last_run_at"]) for x in sweep] == [
        (iso(now.at + timedelta(hours=1)), iso(now.at))
    ]


async def test_fire_unknown_ids(desk: ServiceClient) -> None:
    for id in ("01a23112-0416-7030-9029-07c59bda73a3", "Desk.nothing"):
        r = await desk.post(f"/api/admin/timers/{id}/fire")
        assert r.status_code == 404, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "no pending timeout or context timer" in r.json()["detail"]


async def test_fire_while_the_scheduler_fires_runs_once(desk: ServiceClient, now: Clock) -> None:
    tickets = [await open_ticket(desk) for _ in range(6)]
    jobs = {x["key"]: x["job_id"] for x in await timers(desk) if x["kind"] == "timeout"}
    # the sweep out of the way first (it nudges every ticket once); its next tick is later
    now.at = START + timedelta(minutes=1)
    await ok(await desk.post("/api/admin/timers/Desk.sweep/fire"))
    now.at = START + timedelta(hours=1)  # every timeout due
    scheduler = desk.service.scheduler
    fires = [desk.post(f"/api/admin/timers/{jobs[t]}/fire") for t in tickets]

    async def scheduler_round() -> int:
        await asyncio.sleep(0.01)  # let the first requests claim theirs: both sides win some
        return await scheduler.run_due()

    async with asyncio.TaskGroup() as group:  # started in this order, as one gather would
        round_ = group.create_task(scheduler_round())
        firing = [group.create_task(fire) for fire in fires]
    ran, answers = round_.result(), [task.result() for task in firing]
    statuses = [r.status_code for r in answers]
    outcomes = [r.json().get("outcome") for r in answers if r.status_code == 200]
    # each timeout fired once, by whichever claimed it first: the other finds it leased (409),
    # consumed (404) or no longer armed (stale)
    assert set(statuses) <= {200, 404, 409}, [r.text for r in answers]
    assert set(outcomes) <= {"fired", "stale"}
    for t in tickets:
        follow_up = await ok(await desk.get(f"/api/workflows/follow_up/instances/{t}"))
        assert (follow_up["nudges"], follow_up["ended"]) == (1, True), follow_up
        assert (await ok(await desk.get(f"/api/tickets/{t}")))["nudged"] == 2
    assert [x["kind"] for x in await timers(desk)] == ["timer"]
    print(f"fired by the route: {outcomes.count('fired')}, by the scheduler: {ran}; {statuses}")
