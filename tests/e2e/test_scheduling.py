"""The scheduling example (examples/scheduling): process managers written in the language, over
HTTP on SQLite and PostgreSQL, with a virtual clock (no sleeps).

- a requested appointment is confirmed in time (its deadline disarmed, the instance ended) or
  expires at its deadline;
- a held slot is confirmed by its deposit within 15 minutes, or released with the compensation;
- "deposit paid" and "deadline passed" arriving together: exactly one outcome wins;
- re-arming a timeout replaces it; a step that rolls back leaves the timers as they were;
- two steps deciding on the same instance version: a request answers 409, a durable delivery is
  redelivered and decides again from the new state;
- the context timer sweeps a deadline whose timeout was lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, table, update

from loom.testing import ServiceClient, VirtualClock, serve
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[2]
SCHEDULING = [ROOT / "examples/scheduling/scheduling.loom"]
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
timers_table = table("__loom_timers")


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def app(database_url: str, clock: VirtualClock) -> AsyncIterator[ServiceClient]:
    async with serve(SCHEDULING, database_url, clock=clock) as client:
        yield client


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


async def ok(r: Any) -> Any:
    assert r.status_code in (200, 204), r.text
    return r.json() if r.status_code == 200 else None


async def request(c: ServiceClient, confirm_in: timedelta = timedelta(hours=1)) -> str:
    body = {
        "patient": "Ada",
        "practitioner": "Dr Who",
        "startsAt": iso(START + timedelta(days=1)),
        "confirmBefore": iso(START + confirm_in),
    }
    return str(await ok(await c.post("/api/workflows/request_appointment", json=body)))


async def hold(c: ServiceClient) -> str:
    body = {"patient": "Ada", "practitioner": "Dr Who", "startsAt": iso(START + timedelta(days=1))}
    return str(await ok(await c.post("/api/workflows/hold_slot", json=body)))


async def appointment(c: ServiceClient, id: str) -> dict[str, Any]:
    got: dict[str, Any] = await ok(await c.get(f"/api/appointments/{id}"))
    return got


async def instance(c: ServiceClient, workflow: str, id: str) -> dict[str, Any]:
    got: dict[str, Any] = await ok(await c.get(f"/api/workflows/{workflow}/instances/{id}"))
    return got


def due(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def timeouts(inst: dict[str, Any]) -> list[tuple[str, datetime]]:
    return [(t["name"], datetime.fromisoformat(t["dueAt"])) for t in inst["timeouts"]]


# -- the confirmation deadline --------------------------------------------------------------------
async def test_confirmed_in_time_disarms_and_ends(app: ServiceClient, clock: VirtualClock) -> None:
    a = await request(app)
    got = await instance(app, "confirmation_deadline", a)
    assert (got["ended"], timeouts(got)) == (False, [("deadline", START + timedelta(hours=1))])
    await clock.advance(timedelta(minutes=30))
    await ok(await app.post(f"/api/appointments/{a}/confirm"))
    assert (await appointment(app, a))["status"] == "Confirmed"
    got = await instance(app, "confirmation_deadline", a)
    assert (got["ended"], got["timeouts"]) == (True, [])
    # the runner lists the instances of .loom-built processes too
    listed = await app.service.processes.list("Scheduling.ConfirmationDeadline")
    assert [(i.key, i.ended) for i in listed] == [(a, True)]
    assert listed[0].state["appointment"] == a and listed[0].version >= 2
    ran = await clock.advance(timedelta(hours=2))
    assert ran == 2  # two sweeps of the hourly timer, no timeout
    assert (await appointment(app, a))["status"] == "Confirmed"


async def test_expires_at_the_deadline(app: ServiceClient, clock: VirtualClock) -> None:
    a = await request(app)
    await clock.advance(timedelta(minutes=59, seconds=59))
    assert (await appointment(app, a))["status"] == "Requested"
    await clock.advance(timedelta(seconds=1))
    assert (await appointment(app, a))["status"] == "Expired"
    got = await instance(app, "confirmation_deadline", a)
    assert (got["ended"], got["timeouts"]) == (True, [])
    # an ended instance ignores later events: confirming is refused by the appointment's gate
    r = await app.post(f"/api/appointments/{a}/confirm")
    assert r.status_code == 422, r.text


async def test_a_deadline_already_past_fires_at_the_next_pass(
    app: ServiceClient, clock: VirtualClock
) -> None:
    """`schedule … at` an instant before now is armed, not refused, and fires at once: the next
    pass of the scheduler, with no time going by."""
    a = await request(app, confirm_in=-timedelta(hours=1))
    got = await instance(app, "confirmation_deadline", a)
    assert timeouts(got) == [("deadline", START - timedelta(hours=1))]
    assert await clock.advance(timedelta(0)) == 1
    assert (await appointment(app, a))["status"] == "Expired"


async def test_cancelled_appointment_ends_its_deadline(
    app: ServiceClient, clock: VirtualClock
) -> None:
    a = await request(app)
    await ok(await app.post(f"/api/appointments/{a}/cancel", json={"reason": "patient"}))
    got = await instance(app, "confirmation_deadline", a)
    assert (got["ended"], got["timeouts"]) == (True, [])
    await clock.advance(timedelta(hours=2))
    assert (await appointment(app, a))["status"] == "Cancelled"


# -- the deposit ----------------------------------------------------------------------------------
async def test_deposit_paid_in_time_confirms(app: ServiceClient, clock: VirtualClock) -> None:
    a = await hold(app)
    got = await instance(app, "deposit_hold", a)
    assert timeouts(got) == [("deposit", START + timedelta(minutes=15))]
    await clock.advance(timedelta(minutes=14))
    await ok(await app.post(f"/api/appointments/{a}/pay_deposit"))
    await clock.advance(timedelta(minutes=5))
    got = await appointment(app, a)
    assert (got["status"], got["cancelReason"]) == ("Confirmed", "")
    got = await instance(app, "deposit_hold", a)
    assert (got["ended"], got["timeouts"]) == (True, [])


async def test_no_deposit_releases_the_slot(app: ServiceClient, clock: VirtualClock) -> None:
    a = await hold(app)
    await clock.advance(timedelta(minutes=15))
    got = await appointment(app, a)
    assert (got["status"], got["cancelReason"]) == ("Cancelled", "deposit-not-received")
    got = await instance(app, "deposit_hold", a)
    assert (got["ended"], got["timeouts"]) == (True, [])
    r = await app.post(f"/api/appointments/{a}/pay_deposit")
    assert r.status_code == 422, r.text  # too late: the slot is released (its `when` gate)


@pytest.mark.parametrize("rounds", [3])
async def test_race_deposit_paid_and_deadline_passed(
    app: ServiceClient, clock: VirtualClock, rounds: int
) -> None:
    """Both arrive together: exactly one outcome wins, whichever it is."""
    outcomes = set()
    for _ in range(rounds):
        a = await hold(app)
        await clock.advance(timedelta(minutes=14, seconds=59))
        paid, _fired = await asyncio.gather(
            app.post(f"/api/appointments/{a}/pay_deposit"),
            clock.advance(timedelta(seconds=1)),
        )
        await clock.advance(timedelta(seconds=10))  # any redelivery settles
        got = await appointment(app, a)
        if paid.status_code == 204:
            assert (got["status"], got["cancelReason"]) == ("Confirmed", "")
        else:
            assert paid.status_code in (409, 422), paid.text  # lost the race, or too late
            assert (got["status"], got["cancelReason"]) == ("Cancelled", "deposit-not-received")
        outcomes.add(got["status"])
        inst = await instance(app, "deposit_hold", a)
        assert (inst["ended"], inst["timeouts"]) == (True, [])
    assert outcomes <= {"Confirmed", "Cancelled"}


# -- re-arming, rollback, concurrency -------------------------------------------------------------
async def confirmed(app: ServiceClient) -> str:
    a = await request(app)
    await ok(await app.post(f"/api/appointments/{a}/confirm"))
    return a


async def test_rearming_replaces_the_timeout(app: ServiceClient, clock: VirtualClock) -> None:
    a = await confirmed(app)
    first, second = START + timedelta(hours=2), START + timedelta(hours=3)
    await ok(await app.post("/api/workflows/reminder", json={"appointment": a, "at": iso(first)}))
    await ok(await app.post("/api/workflows/reminder", json={"appointment": a, "at": iso(second)}))
    got = await instance(app, "reminder", a)
    assert (got["version"], timeouts(got)) == (2, [("remind", second)])
    await clock.advance(timedelta(hours=2, minutes=30))
    assert (await instance(app, "reminder", a))["sent"] == 0  # the replaced one never fires
    await clock.advance(timedelta(hours=1))
    got = await instance(app, "reminder", a)
    assert (got["sent"], got["timeouts"], got["ended"]) == (1, [], True)  # sent: complete


async def test_a_step_that_rolls_back_leaves_the_timers(
    app: ServiceClient, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await confirmed(app)
    first = START + timedelta(hours=2)
    await ok(await app.post("/api/workflows/reminder", json={"appointment": a, "at": iso(first)}))
    cls = app.module("scheduling.repositories").ReminderInstances

    async def failing_save(self: Any, instance: Any) -> None:
        raise RuntimeError("injected fault")  # the step fails at its end, after it re-armed

    monkeypatch.setattr(cls, "save", failing_save)
    later = {"appointment": a, "at": iso(START + timedelta(hours=5))}
    r = await app.post("/api/workflows/reminder", json=later)
    assert r.status_code == 500, r.text
    monkeypatch.undo()
    got = await instance(app, "reminder", a)
    assert (got["version"], timeouts(got)) == (1, [("remind", first)])


def _racing_save(app: ServiceClient, monkeypatch: pytest.MonkeyPatch, store: str) -> list[int]:
    """Make the next save of `store` lose a race: another step commits a new version of the same
    instance between this step's load and its save (forced, in the step's own transaction, so it
    rolls back with it). Answers a list that counts the forced races."""
    cls = getattr(app.module("scheduling.repositories"), store)
    original = cls.save
    raced: list[int] = []

    async def save(self: Any, instance: Any) -> None:
        if not raced:
            raced.append(1)
            key = cls.key
            conn = await self.work.connection()
            stmt = (
                update(cls.table)
                .where(cls.table.c[key] == getattr(instance, key))
                .values(version=cls.table.c.version + 1)
            )
            await conn.execute(stmt)
        await original(self, instance)

    monkeypatch.setattr(cls, "save", save)
    return raced


async def test_forced_race_on_a_request_answers_409(
    app: ServiceClient, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await confirmed(app)
    first = START + timedelta(hours=2)
    await ok(await app.post("/api/workflows/reminder", json={"appointment": a, "at": iso(first)}))
    raced = _racing_save(app, monkeypatch, "ReminderInstances")
    later = {"appointment": a, "at": iso(START + timedelta(hours=5))}
    r = await app.post("/api/workflows/reminder", json=later)
    assert (r.status_code, r.json()["type"]) == (409, "urn:loom:problem:concurrency-conflict")
    assert raced == [1]
    got = await instance(app, "reminder", a)
    assert (got["version"], timeouts(got)) == (1, [("remind", first)])  # nothing of the loser
    await ok(await app.post("/api/workflows/reminder", json=later))  # retried: it wins now
    got = await instance(app, "reminder", a)
    assert (got["version"], timeouts(got)) == (2, [("remind", START + timedelta(hours=5))])


async def test_forced_race_on_a_durable_delivery_is_redelivered(
    app: ServiceClient, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = await request(app)
    raced = _racing_save(app, monkeypatch, "ConfirmationDeadlineInstances")
    # AppointmentConfirmed rides the Bookings channel: the step that loses its race rolls back
    # and the relay delivers the event again, which decides from the new state.
    await ok(await app.post(f"/api/appointments/{a}/confirm"))
    await clock.advance(timedelta(seconds=30))
    assert raced == [1]
    got = await instance(app, "confirmation_deadline", a)
    assert (got["ended"], got["timeouts"]) == (True, [])
    await clock.advance(timedelta(hours=2))
    assert (await appointment(app, a))["status"] == "Confirmed"


# -- the context timer ----------------------------------------------------------------------------
async def test_timer_sweeps_a_deadline_whose_timeout_was_lost(
    app: ServiceClient, clock: VirtualClock
) -> None:
    a = await request(app, confirm_in=timedelta(minutes=10))
    async with app.service.engine.begin() as conn:  # the timeout is lost (say, a bad migration)
        await conn.execute(delete(timers_table))
    await clock.advance(timedelta(minutes=30))
    assert (await appointment(app, a))["status"] == "Requested"
    await clock.advance(timedelta(minutes=30))  # the hourly sweep
    assert (await appointment(app, a))["status"] == "Expired"


async def _notices(app: ServiceClient, a: str) -> dict[str, Any] | None:
    r = await app.get(f"/api/projections/notices/{a}")
    return r.json() if r.status_code == 200 else None  # a 404 until the first notice is folded


async def test_the_notices_fold_the_expiry_and_the_reminders(
    app: ServiceClient, clock: VirtualClock
) -> None:
    """`Notices` folds the events nothing else takes (loom.event-unconsumed): an expiry, and each
    reminder sent, which ends its Reminder (loom.process-never-completes)."""
    expired = await request(app)
    await clock.advance(timedelta(hours=1))
    got = await until(
        lambda: _notices(app, expired), timeout=10, what="the expiry folded into Notices"
    )
    assert (got["expired"], got["reminders"]) == (True, 0)

    a = await confirmed(app)
    for hours in (2, 4):  # a reminder, and, once it ended, the next episode's
        at = START + timedelta(hours=hours)
        await ok(await app.post("/api/workflows/reminder", json={"appointment": a, "at": iso(at)}))
        await clock.advance(timedelta(hours=2))
    got = await until(
        lambda: _reminded_twice(app, a), timeout=10, what="two reminders folded into Notices"
    )
    assert (got["expired"], got["reminders"]) == (False, 2)
    assert (await instance(app, "reminder", a))["ended"] is True


async def _reminded_twice(app: ServiceClient, a: str) -> dict[str, Any] | None:
    got = await _notices(app, a)
    return got if got is not None and got["reminders"] == 2 else None
