"""Tenanted workflow instances, their episodes and timeouts, and tenanted projections
(docs/language.md#tenants), over HTTP on SQLite and PostgreSQL with a virtual clock
(tests/e2e/models/tenants_instances.loom).

Two tenants, `acme` (A) and `globex` (B), drive the same correlation key (a ticket id either may
send to `report` / `settle`) through a process with a timeout: each tenant's instance, episodes,
timeout and projection row are its own; the other tenant's guesses of them are 404s (never 200,
never 403); a timeout fires once per instance, in its own tenant, and writes only there. Every
cross-tenant attempt is counted: `cross-tenant attempts: N, leaked: 0`."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.tokens import token, use_secret

MODEL = [Path(__file__).resolve().parent / "models" / "tenants_instances.loom"]
START = datetime(2030, 5, 6, 9, 0, tzinfo=UTC)
ESCALATION = "/api/workflows/escalation/instances"
HOLD = "/api/workflows/hold/instances"
ACTIVITY = "/api/projections/ticket_activity"

A = token(tenant="acme")
B = token(sub="bob", tenant="globex")
C = token(sub="cy", tenant="initech")  # a third tenant that never drove anything
NO_TENANT = token(sub="dan")
OPERATOR = token(sub="ops", roles=["admin"])
A_ADMIN = token(sub="ann", tenant="acme", roles=["admin"])  # acme's own administrator
B_ADMIN = token(sub="bob", tenant="globex", roles=["admin"])


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def desk(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve(MODEL, database_url, clock=clock) as client:
        yield client


def facts(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [x for x in found if x["event"] == event]


@dataclass
class Probe:
    """Reads as one tenant what must be its own, and counts every way another could leak."""

    c: ServiceClient
    attempts: int = 0
    leaked: list[tuple[object, ...]] = field(default_factory=list)  # what leaked, in words

    async def own(self, who: dict[str, str], path: str) -> Any:
        r = await self.c.get(path, headers=who)
        assert r.status_code == 200, (path, r.text)
        return r.json()

    async def absent(self, who: dict[str, str], path: str) -> None:
        """`path` names a row `who`'s tenant does not have: a 404, exactly like an unknown key."""
        self.attempts += 1
        r = await self.c.get(path, headers=who)
        if r.status_code != 404:
            self.leaked.append((path, r.status_code, r.text))
        elif r.json()["type"] != "urn:loom:problem:not-found":
            self.leaked.append((path, "not the not-found problem", r.text))

    async def unlisted(self, who: dict[str, str], path: str, key: str) -> None:
        self.attempts += 1
        r = await self.c.get(path, headers=who)
        if r.status_code != 200 or key in r.text:
            self.leaked.append((f"{path} listed {key}", r.text))

    def report(self) -> None:
        print(f"cross-tenant attempts: {self.attempts}, leaked: {len(self.leaked)}")
        assert self.attempts > 0
        assert not self.leaked, self.leaked


async def post(c: ServiceClient, who: dict[str, str], path: str, body: Any = None) -> Any:
    r = await c.post(path, json=body if body is not None else {}, headers=who)
    assert r.status_code in (200, 201, 204), (path, r.text)
    return r.json() if r.status_code != 204 else None


async def open_ticket(c: ServiceClient, who: dict[str, str], title: str) -> str:
    return str(await post(c, who, "/api/workflows/open_ticket", {"title": title}))


async def test_two_tenants_drive_one_key_through_a_process_with_a_timeout(
    desk: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    probe = Probe(desk)
    ticket = await open_ticket(desk, A, "printer")  # A's ticket; A's escalation, due in a day
    await clock.advance(timedelta(hours=1))
    await post(desk, B, "/api/workflows/report", {"ticket": ticket})  # B reports the same id
    await post(desk, B, "/api/workflows/report", {"ticket": ticket})  # twice

    a = await probe.own(A, f"{ESCALATION}/{ticket}")
    b = await probe.own(B, f"{ESCALATION}/{ticket}")
    assert (a["opened"], a["episode"], a["startedAt"]) == (1, 1, _iso(START))
    assert (b["opened"], b["episode"], b["startedAt"]) == (2, 1, _iso(START + timedelta(hours=1)))
    assert [t["dueAt"] for t in a["timeouts"]] == [_iso(START + timedelta(days=1))]
    assert [t["dueAt"] for t in b["timeouts"]] == [_iso(START + timedelta(days=1, hours=1))]
    for who in (C,):  # a tenant that never drove the key sees no instance of it
        await probe.absent(who, f"{ESCALATION}/{ticket}")
        await probe.absent(who, f"{ESCALATION}/{ticket}/episodes")
        await probe.absent(who, f"{ACTIVITY}/{ticket}")
    await probe.absent(B, f"/api/tickets/{ticket}")  # B reported A's id; the ticket stays A's

    # A resolves: A's episode completes and A's timeout is disarmed; B's runs on
    await post(desk, A, f"/api/tickets/{ticket}/resolve")
    a = await probe.own(A, f"{ESCALATION}/{ticket}")
    b = await probe.own(B, f"{ESCALATION}/{ticket}")
    assert (a["ended"], a["timeouts"]) == (True, [])
    assert (b["ended"], len(b["timeouts"])) == (False, 1)

    # A's timeout would have been due now: disarmed, nothing fires; B's fires an hour later,
    # once, in B's tenant: its findById of A's ticket finds nothing, A's ticket is untouched
    assert await clock.advance(timedelta(hours=23)) == 0  # now START + 1d
    assert await clock.advance(timedelta(hours=1)) == 1
    fired = facts(caplog, "timeout_fired")
    assert [(x["tenant"], x["key"], x["timeout"]) for x in fired] == [
        ("globex", ticket, "escalate")
    ]
    b = await probe.own(B, f"{ESCALATION}/{ticket}")
    assert (b["ended"], b["timeouts"]) == (True, [])
    mine = await probe.own(A, f"/api/tickets/{ticket}")
    assert (mine["status"], mine["escalations"]) == ("Resolved", 0)
    assert await clock.advance(timedelta(days=3)) == 0  # nothing fires twice

    # the next report starts each tenant's own next episode
    await post(desk, A, "/api/workflows/report", {"ticket": ticket})
    a = await probe.own(A, f"{ESCALATION}/{ticket}")
    assert (a["episode"], a["opened"], a["ended"]) == (2, 1, False)
    assert (await probe.own(B, f"{ESCALATION}/{ticket}"))["episode"] == 1
    a_eps = await probe.own(A, f"{ESCALATION}/{ticket}/episodes")
    b_eps = await probe.own(B, f"{ESCALATION}/{ticket}/episodes")
    assert [(e["episode"], e["status"], e["state"]["opened"]) for e in a_eps] == [
        (1, "completed", 1),
        (2, "running", 1),
    ]
    assert [(e["episode"], e["status"], e["state"]["opened"]) for e in b_eps] == [
        (1, "completed", 2)
    ]

    # the projection folded each tenant's events into its own row of the one key
    assert (await probe.own(A, f"{ACTIVITY}/{ticket}"))["opened"] == 2
    assert (await probe.own(A, f"{ACTIVITY}/{ticket}"))["resolved"] == 1
    assert (await probe.own(B, f"{ACTIVITY}/{ticket}"))["opened"] == 2
    assert (await probe.own(B, f"{ACTIVITY}/{ticket}"))["resolved"] == 0

    # keys only one tenant has: the other's guesses are 404s, and its lists hold none of them
    own_b = await open_ticket(desk, B, "scanner")
    for who, other_key in ((A, own_b), (B, str(uuid.uuid4()))):
        await probe.absent(who, f"{ESCALATION}/{other_key}")
        await probe.absent(who, f"{ESCALATION}/{other_key}/episodes")
        await probe.absent(who, f"{ACTIVITY}/{other_key}")
    await probe.unlisted(A, ACTIVITY, own_b)
    await probe.unlisted(C, ACTIVITY, ticket)
    listed = await probe.own(A, ACTIVITY)
    assert (listed["total"], [r["ticket"] for r in listed["items"]]) == (1, [ticket])
    probe.report()


async def test_a_command_workflow_with_correlation_is_per_tenant(
    desk: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    probe = Probe(desk)
    key = str(uuid.uuid4())
    await post(desk, A, "/api/workflows/hold", {"ticket": key})
    await clock.advance(timedelta(minutes=30))
    await post(desk, B, "/api/workflows/hold", {"ticket": key})  # B's own hold of the key
    a = await probe.own(A, f"{HOLD}/{key}")
    b = await probe.own(B, f"{HOLD}/{key}")
    assert [t["dueAt"] for t in a["timeouts"]] == [_iso(START + timedelta(hours=1))]
    assert [t["dueAt"] for t in b["timeouts"]] == [_iso(START + timedelta(minutes=90))]
    await probe.absent(C, f"{HOLD}/{key}")

    # the operator sees both timeouts, each with its tenant
    r = await desk.get("/api/admin/timers", headers=OPERATOR)
    assert r.status_code == 200, r.text
    pending = [(i["tenant"], i["key"]) for i in r.json()["items"] if i["kind"] == "timeout"]
    assert pending == [("acme", key), ("globex", key)]
    a_job = next(i["job_id"] for i in r.json()["items"] if i.get("tenant") == "acme")
    # a tenant's administrator sees its own timeouts only, no context timer, and cannot fire
    # another tenant's (404)
    r = await desk.get("/api/admin/timers", headers=B_ADMIN)
    assert r.status_code == 200, r.text
    assert [(i["kind"], i["tenant"]) for i in r.json()["items"]] == [("timeout", "globex")]
    assert r.json()["total"] == 1
    r = await desk.post(f"/api/admin/timers/{a_job}/fire", headers=B_ADMIN)
    probe.attempts += 1
    if r.status_code != 404:
        probe.leaked.append(("B's admin fired A's timeout", r.text))
    r = await desk.get("/api/admin/timers", headers=A_ADMIN)
    assert [(i["job_id"], i["tenant"]) for i in r.json()["items"]] == [(a_job, "acme")]

    assert await clock.advance(timedelta(minutes=30)) == 1  # A's lapses, in A
    assert (await probe.own(A, f"{HOLD}/{key}"))["ended"] is True
    assert (await probe.own(B, f"{HOLD}/{key}"))["ended"] is False
    assert await clock.advance(timedelta(minutes=30)) == 1  # then B's, in B
    assert (await probe.own(B, f"{HOLD}/{key}"))["ended"] is True
    fired = facts(caplog, "timeout_fired")
    assert [(x["tenant"], x["timeout"]) for x in fired] == [("acme", "lapse"), ("globex", "lapse")]
    probe.report()


async def test_instance_and_projection_routes_need_a_tenant(desk: ServiceClient) -> None:
    key = str(uuid.uuid4())
    for path in (f"{ESCALATION}/{key}", f"{ESCALATION}/{key}/episodes", f"{ACTIVITY}/{key}"):
        assert (await desk.get(path)).status_code == 401
        assert (await desk.get(path, headers=NO_TENANT)).status_code == 403
    assert (await desk.get(ACTIVITY)).status_code == 401
    assert (await desk.get(ACTIVITY, headers=NO_TENANT)).status_code == 403
    # hostile keys are a 422, never a 500
    for bad in ("not-a-uuid", "1' OR '1'='1", "%00"):
        for path in (f"{ESCALATION}/{bad}", f"{ACTIVITY}/{bad}"):
            r = await desk.get(path, headers=A)
            assert r.status_code == 422, (path, r.text)


async def test_a_dead_timeout_is_redriven_and_fired_in_its_own_tenant(
    desk: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A's escalation fails (its ticket is no longer open: `escalate` is refused) until it is
    dead; the operator sees it with A's tenant, and the redrive fires it in A. B's instance of
    the same key, and the operator's fire of B's hold, stay B's."""
    caplog.set_level(logging.INFO, logger="loom.events")
    probe = Probe(desk)
    ticket = await open_ticket(desk, A, "router")
    await post(desk, B, "/api/workflows/report", {"ticket": ticket})
    await post(desk, B, "/api/workflows/hold", {"ticket": ticket})
    r = await desk.patch(f"/api/tickets/{ticket}", json={"status": "Escalated"}, headers=A)
    assert r.status_code == 200, r.text
    r = await desk.patch(f"/api/tickets/{ticket}", json={"status": "Open"}, headers=B)
    probe.attempts += 1
    if r.status_code != 404:
        probe.leaked.append(("B patched A's ticket", r.text))

    # the operator fires B's hold now: it runs in B, A has no hold of the key
    r = await desk.get("/api/admin/timers", headers=OPERATOR)
    [hold] = [
        i for i in r.json()["items"] if i["kind"] == "timeout" and i["process"] == "Desk.Hold"
    ]
    assert hold["tenant"] == "globex"
    r = await desk.post(f"/api/admin/timers/{hold['job_id']}/fire", headers=OPERATOR)
    assert (r.status_code, r.json()["outcome"]) == (200, "fired"), r.text
    assert (await probe.own(B, f"{HOLD}/{ticket}"))["ended"] is True
    await probe.absent(A, f"{HOLD}/{ticket}")

    await clock.advance(timedelta(days=3))  # A's fails every attempt, B's fires (no ticket in B)
    r = await desk.get("/api/admin/dead-letters?kind=timeout", headers=OPERATOR)
    assert r.status_code == 200, r.text
    dead = r.json()["items"]
    assert [(d["tenant"], d["process"], d["key"]) for d in dead] == [
        ("acme", "Desk.Escalation", ticket)
    ]
    assert (await probe.own(B, f"{ESCALATION}/{ticket}"))["ended"] is True
    a = await probe.own(A, f"{ESCALATION}/{ticket}")
    assert (a["ended"], [t["name"] for t in a["timeouts"]]) == (False, ["escalate"])  # dead

    # the ticket open again, the redrive fires A's escalation in A, once
    r = await desk.patch(f"/api/tickets/{ticket}", json={"status": "Open"}, headers=A)
    assert r.status_code == 200, r.text
    r = await desk.post(f"/api/admin/dead-letters/{dead[0]['job_id']}/redrive", headers=OPERATOR)
    assert r.status_code in (200, 204), r.text
    assert await clock.advance(timedelta(seconds=1)) == 1
    mine = await probe.own(A, f"/api/tickets/{ticket}")
    assert (mine["status"], mine["escalations"]) == ("Escalated", 1)
    assert (await probe.own(A, f"{ESCALATION}/{ticket}"))["ended"] is True
    fired = [(x["tenant"], x["process"]) for x in facts(caplog, "timeout_fired")]
    assert sorted(fired) == [
        ("acme", "Desk.Escalation"),
        ("globex", "Desk.Escalation"),
        ("globex", "Desk.Hold"),
    ]
    probe.report()


async def test_many_tenants_start_one_key_at_once(
    desk: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Eight tenants report the same ticket id concurrently: eight instances, eight timeouts, and
    no starter refused (their keys differ by the tenant); each fires once, in its tenant."""
    caplog.set_level(logging.INFO, logger="loom.events")
    probe = Probe(desk)
    key = str(uuid.uuid4())
    tenants = [f"t{i}" for i in range(8)]
    who = {t: token(sub=f"u-{t}", tenant=t) for t in tenants}
    await asyncio.gather(
        *(post(desk, who[t], "/api/workflows/report", {"ticket": key}) for t in tenants)
    )
    assert not facts(caplog, "reactor_failed")
    for t in tenants:
        instance = await probe.own(who[t], f"{ESCALATION}/{key}")
        assert (instance["opened"], len(instance["timeouts"])) == (1, 1)
        assert (await probe.own(who[t], f"{ACTIVITY}/{key}"))["opened"] == 1
        await probe.unlisted(C, ACTIVITY, key)
    assert await clock.advance(timedelta(days=1)) == len(tenants)
    fired = facts(caplog, "timeout_fired")
    assert sorted(x["tenant"] for x in fired) == tenants
    probe.report()
