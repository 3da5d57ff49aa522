"""Rescheduling and cancelling timers over HTTP, on SQLite and PostgreSQL (docs/processes.md,
"Timers for operators"): a timeout moves to a new due time or is disarmed; a context timer's
next tick moves, and cancelling it is a 409 that says why; against the scheduler each timeout
is either cancelled or fired, never both; a tenant's administrator reaches its tenant's
timeouts only; each change is in the audit log; bad input is a 4xx problem."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.test_process_admin import A_ADMIN, MODELS, OPERATOR, A, B
from tests.e2e.test_timers_admin import START, Clock, iso, now, open_ticket, timers
from tests.e2e.tokens import use_secret

__all__ = ["now"]  # the fixture


@pytest.fixture
async def desk(
    database_url: str, now: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the test runs the scheduler's rounds
    async with serve([MODELS / "desk_timers.loom"], database_url) as client:
        yield client


async def ok(r: Any) -> Any:
    assert r.status_code == 200, r.text
    return r.json()


def at(x: Any) -> str:
    return iso(START + x)


async def test_reschedule_and_cancel_a_timeout(desk: ServiceClient, now: Clock) -> None:
    first, second = await open_ticket(desk), await open_ticket(desk)
    jobs = {x["key"]: x["job_id"] for x in await timers(desk) if x["kind"] == "timeout"}
    later = at(timedelta(hours=5))
    moved = await ok(
        await desk.post(f"/api/admin/timers/{jobs[first]}/reschedule", json={"due_at": later})
    )
    assert moved == {"id": jobs[first], "kind": "timeout", "due_at": later}
    gone = await ok(await desk.post(f"/api/admin/timers/{jobs[second]}/cancel"))
    assert gone["kind"] == "timeout" and gone["due_at"] == at(timedelta(hours=1))
    listed = {x.get("key"): x["due_at"] for x in await timers(desk) if x["kind"] == "timeout"}
    assert listed == {first: later}

    now.at = START + timedelta(hours=2)  # the old due time passed: nothing fires
    await desk.service.scheduler.run_due()
    for t in (first, second):
        assert (await ok(await desk.get(f"/api/workflows/follow_up/instances/{t}")))["nudges"] == 0
    now.at = START + timedelta(hours=5)
    await desk.service.scheduler.run_due()
    done = await ok(await desk.get(f"/api/workflows/follow_up/instances/{first}"))
    assert (done["nudges"], done["ended"]) == (1, True)

    r = await desk.post(f"/api/admin/timers/{jobs[second]}/cancel")  # cancelled already
    assert r.status_code == 404 and "no pending timeout" in r.text
    audit = (await ok(await desk.get("/api/admin/audit")))["items"]
    assert [(a["action"], a["actor"], a["targets"]) for a in audit] == [
        ("cancel", "loopback", [jobs[second]]),
        ("reschedule", "loopback", [jobs[first]]),
    ]
    assert audit[1]["parameters"] == {"due_at": "2030-05-01T14:00:00+00:00"}


async def test_a_context_timer_is_rescheduled_not_cancelled(
    desk: ServiceClient, now: Clock
) -> None:
    t = await open_ticket(desk)
    soon = at(timedelta(minutes=5))
    moved = await ok(
        await desk.post("/api/admin/timers/Desk.sweep/reschedule", json={"due_at": soon})
    )
    assert moved == {"id": "Desk.sweep", "kind": "timer", "due_at": soon}
    sweep = [x for x in await timers(desk) if x["kind"] == "timer"]
    assert [x["due_at"] for x in sweep] == [soon]
    now.at = START + timedelta(minutes=5)
    assert await desk.service.scheduler.run_due() == 1  # the sweep, at its new time
    assert (await ok(await desk.get(f"/api/tickets/{t}")))["nudged"] == 1

    r = await desk.post("/api/admin/timers/Desk.sweep/cancel")
    assert r.status_code == 409, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert "context timer" in r.json()["detail"] and "reschedule" in r.json()["detail"]


@pytest.mark.parametrize(
    ("id", "body", "status"),
    [
        ("Desk.sweep", {}, 422),
        ("Desk.sweep", {"due_at": "tomorrow"}, 422),
        ("Desk.sweep", {"due_at": "2030-05-01T09:00:00"}, 422),  # no offset: no instant
        ("Desk.sweep", {"due_at": "2030-05-01T09:00:00Z", "at": 1}, 422),
        ("Desk.nothing", {"due_at": "2030-05-01T09:00:00Z"}, 404),
        ("01a23112-0416-7030-9029-07c59bda73a3", {"due_at": "2030-05-01T09:00:00Z"}, 404),
    ],
)
async def test_bad_reschedules_are_problems(
    desk: ServiceClient, id: str, body: dict[str, Any], status: int
) -> None:
    r = await desk.post(f"/api/admin/timers/{id}/reschedule", json=body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("action", ["cancel", "reschedule"])
async def test_a_change_against_the_scheduler_is_one_or_the_other(
    desk: ServiceClient, now: Clock, action: str
) -> None:
    tickets = [await open_ticket(desk) for _ in range(6)]
    jobs = {x["key"]: x["job_id"] for x in await timers(desk) if x["kind"] == "timeout"}
    now.at = START + timedelta(minutes=1)
    await ok(await desk.post("/api/admin/timers/Desk.sweep/fire"))  # the sweep out of the way
    now.at = START + timedelta(hours=1)  # every timeout due
    body = {"due_at": at(timedelta(days=9))} if action == "reschedule" else None
    cancels = [desk.post(f"/api/admin/timers/{jobs[t]}/{action}", json=body) for t in tickets]

    async def scheduler_round() -> int:
        await asyncio.sleep(0)  # let the first requests start: both sides win some
        return await desk.service.scheduler.run_due()

    async with asyncio.TaskGroup() as group:
        round_ = group.create_task(scheduler_round())
        cancelling = [group.create_task(c) for c in cancels]
    answers = [task.result() for task in cancelling]
    assert {r.status_code for r in answers} <= {200, 404, 409}, [r.text for r in answers]
    for t, r in zip(tickets, answers, strict=True):
        follow_up = await ok(await desk.get(f"/api/workflows/follow_up/instances/{t}"))
        fired = (follow_up["nudges"], follow_up["ended"]) == (1, True)
        # changed (200) and not fired, or fired once by the scheduler and not changed
        assert fired == (r.status_code != 200), (r.status_code, follow_up)
    changed = sum(r.status_code == 200 for r in answers)
    left = [x for x in await timers(desk) if x["kind"] == "timeout"]
    assert len(left) == (changed if action == "reschedule" else 0)
    print(f"{action}: {changed}, fired by the scheduler: {round_.result()}")


@pytest.fixture
async def tenanted(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    with VirtualClock(start=START) as clock:
        async with serve([MODELS / "tenants_instances.loom"], database_url, clock=clock) as c:
            yield c


async def test_a_tenant_admin_changes_its_own_timeouts_only(tenanted: ServiceClient) -> None:
    c = tenanted
    key = "11111111-2222-3333-4444-555555555555"
    for who in (A, B):
        r = await c.post("/api/workflows/report", json={"ticket": key}, headers=who)
        assert r.status_code == 204, r.text
    page = await ok(await c.get("/api/admin/timers", headers=OPERATOR))
    jobs = {x["tenant"]: x["job_id"] for x in page["items"] if x["kind"] == "timeout"}
    due = {"due_at": at(timedelta(days=3))}
    attempts = 0
    leaked: list[tuple[Any, ...]] = []
    for path, body in (
        (f"/api/admin/timers/{jobs['globex']}/reschedule", due),
        (f"/api/admin/timers/{jobs['globex']}/cancel", None),
    ):
        attempts += 1
        r = await c.post(path, json=body, headers=A_ADMIN)
        if r.status_code != 404:
            leaked.append((path, r.status_code, r.text))
    for timer in [x["timer"] for x in page["items"] if x["kind"] == "timer"]:
        attempts += 1  # a context timer runs for every tenant: the operator's
        r = await c.post(f"/api/admin/timers/{timer}/reschedule", json=due, headers=A_ADMIN)
        if r.status_code != 404:
            leaked.append((timer, r.status_code, r.text))
    after = await ok(await c.get("/api/admin/timers", headers=OPERATOR))
    assert after["items"] == page["items"]  # nothing moved
    mine = await ok(
        await c.post(f"/api/admin/timers/{jobs['acme']}/reschedule", json=due, headers=A_ADMIN)
    )
    assert mine["due_at"] == due["due_at"]
    for who in (A, B, {}):
        attempts += 1
        r = await c.post(f"/api/admin/timers/{jobs['acme']}/cancel", headers=who)
        if r.status_code not in (401, 403):
            leaked.append(("no admin", who, r.status_code, r.text))
    audit = (await ok(await c.get("/api/admin/audit", headers=A_ADMIN)))["items"]
    assert [(a["action"], a["actor"], a["tenant"]) for a in audit] == [
        ("reschedule", "ann", "acme")
    ]
    print(f"cross-tenant attempts: {attempts}, leaked: {len(leaked)}")
    assert not leaked, leaked
