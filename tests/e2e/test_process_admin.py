"""Operators' process instance routes over HTTP, on SQLite and PostgreSQL (docs/processes.md,
"Instances for operators"):

- `GET /api/admin/processes` counts each process's instances (running, completed) and timeouts;
- `GET /api/admin/processes/{process}/instances` lists them without their keys known, filtered by
  state, key, tenant and start time, paged;
- `GET /api/admin/processes/{process}/instances/{key}` shows one with its timeouts and their
  status (armed, due, dead);
- across tenants for the operator; a tenant's administrator sees its own tenant's only, and
  another tenant's key is a 404 (every attempt counted: `leaked: 0`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.runtime import clock as clock_
from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.tokens import token, use_secret

MODELS = Path(__file__).resolve().parent / "models"
START = datetime(2030, 5, 6, 9, 0, tzinfo=UTC)
FOLLOW_UP = "/api/admin/processes/Desk.FollowUp/instances"
ESCALATION = "/api/admin/processes/Desk.Escalation/instances"

OPERATOR = token(sub="ops", roles=["admin"])
A = token(tenant="acme")
B = token(sub="bob", tenant="globex")
A_ADMIN = token(sub="ann", tenant="acme", roles=["admin"])


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


class StillClock:
    """A clock that moves only when told and runs nothing on the way (a `VirtualClock` fires
    what comes due): a timeout can be seen due, with no scheduler to take it."""

    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at

    def advance(self, by: timedelta) -> None:
        self.at += by


@pytest.fixture
def still() -> Iterator[StillClock]:
    c = StillClock()
    clock_.set_clock(c)
    yield c
    clock_.reset_clock()


@pytest.fixture
async def desk(
    database_url: str, still: StillClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the test fires the timeouts itself
    async with serve([MODELS / "desk_timers.loom"], database_url) as client:
        yield client


async def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


async def open_ticket(c: ServiceClient) -> str:
    return str(await ok(await c.post("/api/workflows/open_ticket", json={"title": "printer"})))


async def test_instances_listed_without_their_keys(desk: ServiceClient, still: StillClock) -> None:
    first = await open_ticket(desk)
    still.advance(timedelta(minutes=30))
    second = await open_ticket(desk)

    (follow_up,) = [
        p
        for p in await ok(await desk.get("/api/admin/processes"))
        if p["process"] == "Desk.FollowUp"
    ]
    assert follow_up == {
        "process": "Desk.FollowUp",
        "running": 2,
        "completed": 0,
        "timeouts_armed": 2,
        "timeouts_dead": 0,
    }

    page = await ok(await desk.get(FOLLOW_UP))
    assert page["total"] == 2 and page["limit"] == 50
    assert sorted(i["key"] for i in page["items"]) == sorted([first, second])
    one = next(i for i in page["items"] if i["key"] == first)
    assert one["state"] == "running" and one["episode"] == 1 and one["tenant"] is None
    assert one["fields"] == {"ticket": first, "nudges": 0}
    assert one["started_at"] == iso(START)

    older = await ok(
        await desk.get(FOLLOW_UP, params={"started_before": iso(START + timedelta(minutes=1))})
    )
    assert [i["key"] for i in older["items"]] == [first]
    assert (await ok(await desk.get(FOLLOW_UP, params={"key": second})))["total"] == 1
    assert (await ok(await desk.get(FOLLOW_UP, params={"state": "completed"})))["total"] == 0
    paged = await ok(await desk.get(FOLLOW_UP, params={"limit": 1, "offset": 1}))
    assert paged["total"] == 2 and len(paged["items"]) == 1


async def test_an_instance_with_its_timeouts(desk: ServiceClient, still: StillClock) -> None:
    ticket = await open_ticket(desk)
    detail = await ok(await desk.get(f"{FOLLOW_UP}/{ticket}"))
    (nudge,) = detail["timeouts"]
    assert nudge["name"] == "nudge" and nudge["status"] == "armed" and nudge["attempts"] == 0
    # its process's state machine, as `loom diagram --view states` draws it, its state marked
    machine = detail["machine"]
    assert machine["current"] == "Desk.FollowUp.running"
    assert {n["id"]: n["label"] for n in machine["nodes"] if n["shape"] == "round"} == {
        "Desk.FollowUp.running": "running",
        "Desk.FollowUp.completed": "completed",
    }
    moves = {(e["source"], e["target"], e["label"]) for e in machine["edges"]}
    assert ("Desk.FollowUp.running", "Desk.FollowUp.completed", "timeout nudge") in moves
    assert nudge["due_at"] == iso(START + timedelta(hours=1))

    still.advance(timedelta(hours=2))  # due, and no scheduler runs here to take it
    (nudge,) = (await ok(await desk.get(f"{FOLLOW_UP}/{ticket}")))["timeouts"]
    assert nudge["status"] == "due"

    fired = await ok(await desk.post(f"/api/admin/timers/{nudge['job_id']}/fire"))
    assert fired["outcome"] == "fired"
    detail = await ok(await desk.get(f"{FOLLOW_UP}/{ticket}"))
    assert detail["state"] == "completed" and detail["timeouts"] == []
    assert detail["machine"]["current"] == "Desk.FollowUp.completed"
    assert detail["fields"]["nudges"] == 1 and detail["ended_at"] is not None
    done = await ok(await desk.get(FOLLOW_UP, params={"state": "completed"}))
    assert [i["key"] for i in done["items"]] == [ticket]


async def test_unknown_names_and_bad_filters(desk: ServiceClient) -> None:
    r = await desk.get("/api/admin/processes/Desk.Nothing/instances")
    assert r.status_code == 404 and "no process is named Desk.Nothing" in r.text
    r = await desk.get(f"{FOLLOW_UP}/no-such-ticket")
    assert r.status_code == 404 and "no instance of Desk.FollowUp" in r.text
    for bad in ({"state": "stuck"}, {"started_before": "yesterday"}, {"limit": 0}):
        r = await desk.get(FOLLOW_UP, params=bad)
        assert r.status_code == 422, (bad, r.text)
        assert r.headers["content-type"] == "application/problem+json"


@pytest.fixture
async def tenanted(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    async with serve([MODELS / "tenants_instances.loom"], database_url, clock=clock) as client:
        yield client


async def test_tenants_instances_are_the_operator_s_and_each_admin_s_own(
    tenanted: ServiceClient,
) -> None:
    c = tenanted
    key = "11111111-2222-3333-4444-555555555555"  # the same correlation key in two tenants
    for who in (A, B):
        r = await c.post("/api/workflows/report", json={"ticket": key}, headers=who)
        assert r.status_code == 204, r.text

    every = await ok(await c.get(ESCALATION, headers=OPERATOR))
    assert sorted((i["tenant"], i["key"]) for i in every["items"]) == [
        ("acme", key),
        ("globex", key),
    ]
    acme = await ok(await c.get(ESCALATION, params={"tenant": "acme"}, headers=OPERATOR))
    assert [i["tenant"] for i in acme["items"]] == ["acme"]
    r = await c.get(f"{ESCALATION}/{key}", headers=OPERATOR)  # two tenants have it
    assert r.status_code == 404 and "give tenant=" in r.text
    one = await ok(
        await c.get(f"{ESCALATION}/{key}", params={"tenant": "globex"}, headers=OPERATOR)
    )
    assert one["tenant"] == "globex" and [t["name"] for t in one["timeouts"]] == ["escalate"]

    attempts = 0
    leaked: list[tuple[object, ...]] = []
    for path, params in (
        (ESCALATION, {}),
        (ESCALATION, {"tenant": "globex"}),  # a tenant's admin cannot widen its view
        (f"{ESCALATION}/{key}", {}),
        (f"{ESCALATION}/{key}", {"tenant": "globex"}),
        ("/api/admin/processes", {}),
    ):
        attempts += 1
        r = await c.get(path, params=params, headers=A_ADMIN)
        if r.status_code == 200 and "globex" in r.text:
            leaked.append((path, params, r.text))
    mine = await ok(await c.get(ESCALATION, params={"tenant": "globex"}, headers=A_ADMIN))
    assert [i["tenant"] for i in mine["items"]] == ["acme"]
    counts = await ok(await c.get("/api/admin/processes", headers=A_ADMIN))
    assert {p["process"]: p["running"] for p in counts}["Desk.Escalation"] == 1
    for who in (A, B, {}):
        attempts += 1
        r = await c.get(ESCALATION, headers=who)
        if r.status_code not in (401, 403):
            leaked.append(("no admin", who, r.status_code, r.text))
    print(f"cross-tenant attempts: {attempts}, leaked: {len(leaked)}")
    assert not leaked, leaked
