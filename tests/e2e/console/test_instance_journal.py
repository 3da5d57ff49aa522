"""The journal of a process instance (`storage/journal.py`), read back as its timeline by
`GET /api/admin/processes/{process}/instances/{key}` and the console's instance page, over HTTP
on SQLite and PostgreSQL, on the scheduling example: a reaction delivered in process (its event on
no channel), a durable one (from the `Bookings` channel), a fired timeout and a command (the
workflow's own route) are each journaled by the save they make, in order; a step that saves
nothing is not; and the journal stays bounded however many steps an instance takes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from loom.runtime.storage.journal import KEPT_CHARS
from loom.testing import ServiceClient, VirtualClock, serve

ROOT = Path(__file__).resolve().parents[3]
SCHEDULING = [ROOT / "examples/scheduling/scheduling.loom"]
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
HTML = {"Accept": "text/html"}
DEADLINE = "Scheduling.ConfirmationDeadline"


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def app(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY", "LOOM_DEPLOYABLE"):
        monkeypatch.delenv(name, raising=False)  # the loopback operator's
    async with serve(SCHEDULING, database_url, clock=clock) as client:
        yield client


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


async def requested(c: ServiceClient, correlation: str) -> str:
    body = {
        "patient": "Ada",
        "practitioner": "Dr Who",
        "startsAt": iso(START + timedelta(days=1)),
        "confirmBefore": iso(START + timedelta(hours=1)),
    }
    headers = {"X-Correlation-Id": correlation}
    r = await c.post("/api/workflows/request_appointment", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return str(r.json())


async def steps(c: ServiceClient, process: str, key: str) -> list[dict[str, Any]]:
    r = await c.get(f"/api/admin/processes/{process}/instances/{key}")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["steps"]
    print(*found, sep="\n")
    return found


def kinds(found: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(s["kind"], s["step"], s["event_type"]) for s in found]


async def test_in_process_and_durable_reactions_are_journaled(
    app: ServiceClient, clock: VirtualClock
) -> None:
    a = await requested(app, "ada-1")
    await clock.advance(timedelta(minutes=10))
    r = await app.post(f"/api/appointments/{a}/confirm", headers={"X-Correlation-Id": "ada-2"})
    assert r.status_code == 204, r.text
    await app.service.settle()
    found = await steps(app, DEADLINE, a)
    assert kinds(found) == [
        # AppointmentRequested is on no channel: delivered in process, no inbox row
        (
            "reaction",
            f"{DEADLINE}.create(AppointmentRequested)",
            "Scheduling.AppointmentRequested",
        ),
        # AppointmentConfirmed is on `Bookings`: a durable delivery
        ("reaction", f"{DEADLINE}.on(AppointmentConfirmed)", "Scheduling.AppointmentConfirmed"),
    ]
    assert [s["correlation_id"] for s in found] == ["ada-1", "ada-2"]
    assert all(s["event_id"] for s in found)
    assert [s["raised"] for s in found] == [[], []]  # the deadline's steps only arm and end
    assert [s["at"] for s in found] == sorted(s["at"] for s in found)
    assert found[1]["at"] >= iso(START + timedelta(minutes=10))
    # the instance has ended: a later event finds nothing to change, saves nothing, adds nothing
    await app.post(f"/api/appointments/{a}/cancel", json={"reason": "patient"})
    await app.service.settle()
    assert len(await steps(app, DEADLINE, a)) == 2
    page = await app.get(f"/_loom/processes/{DEADLINE}/{a}", headers=HTML)
    assert page.status_code == 200
    timeline = page.text.split("<h2>Timeline</h2>", 1)[1]
    assert f"{DEADLINE}.create(AppointmentRequested)" in timeline
    assert 'href="/_loom/flow?correlation=ada-2"' in timeline


async def test_a_command_and_its_timeout_are_journaled(
    app: ServiceClient, clock: VirtualClock
) -> None:
    a = await requested(app, "ada-1")
    assert (await app.post(f"/api/appointments/{a}/confirm")).status_code == 204
    at = iso(START + timedelta(hours=3))
    headers = {"X-Correlation-Id": "front-desk"}
    body = {"appointment": a, "at": at}
    r = await app.post("/api/workflows/reminder", json=body, headers=headers)
    assert r.status_code == 204, r.text
    await clock.advance(timedelta(hours=3))
    found = await steps(app, "Scheduling.Reminder", a)
    assert kinds(found) == [
        ("command", "Scheduling.Reminder", None),
        ("timeout", "Scheduling.Reminder.timeout(remind)", None),
    ]
    command, timeout = found
    assert (command["raised"], timeout["raised"]) == ([], ["Scheduling.ReminderSent"])
    assert (command["correlation_id"], command["event_id"]) == ("front-desk", None)
    assert timeout["correlation_id"] == "front-desk"  # the arming step's
    assert timeout["at"] == iso(START + timedelta(hours=3))
    page = await app.get(f"/_loom/processes/Scheduling.Reminder/{a}", headers=HTML)
    timeline = page.text.split("<h2>Timeline</h2>", 1)[1]
    assert "a command" in timeline and "<td>Scheduling.ReminderSent</td>" in timeline


async def test_the_journal_keeps_the_latest_steps_within_its_bound(
    app: ServiceClient, clock: VirtualClock
) -> None:
    a = await requested(app, "ada-1")
    assert (await app.post(f"/api/appointments/{a}/confirm")).status_code == 204
    # each setting of the reminder is a command that saves the instance: 80 of them
    for n in range(80):
        body = {"appointment": a, "at": iso(START + timedelta(hours=3, minutes=n))}
        headers = {"X-Correlation-Id": f"set-{n:02}"}
        r = await app.post("/api/workflows/reminder", json=body, headers=headers)
        assert r.status_code == 204, r.text
    found = await steps(app, "Scheduling.Reminder", a)
    async with app.service.engine.connect() as conn:
        stored = (
            await conn.execute(text("SELECT _steps FROM scheduling_reminder_instances"))
        ).scalar_one()
    longest = max(len(line) for line in stored.split("\n"))
    print(f"{len(found)} of 80 steps kept, {len(stored)} characters (bound {KEPT_CHARS})")
    assert len(stored) <= KEPT_CHARS + 1 + longest
    assert 20 <= len(found) < 80
    # the newest kept, in order, none lost in between
    kept = [s["correlation_id"] for s in found]
    assert kept == [f"set-{n:02}" for n in range(80 - len(found), 80)]
