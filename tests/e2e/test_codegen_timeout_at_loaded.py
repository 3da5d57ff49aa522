"""A local read only where the codegen once did not look (tests/e2e/models/reminder_at_loaded.loom),
over HTTP on SQLite and PostgreSQL:

- `let a = Appointments.getById(appointment)` then `schedule remind at a.startsAt`: the generated
  workflow bound no `a` (its walker missed `ScheduleTimeout.at`) and arming the timeout was a
  NameError. Now the timeout is armed at the appointment's time, is listed on the instance, and
  fires there;
- `let later = at` then `moveTo(later)` (a call of another operation of the same aggregate,
  `CallOwnOperation.args`): the local is bound under its own name and the call uses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve

MODEL = [Path(__file__).resolve().parent / "models" / "reminder_at_loaded.loom"]
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def app(database_url: str, clock: VirtualClock) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url, clock=clock) as client:
        yield client


async def ok(r: Any) -> Any:
    assert r.status_code in (200, 201, 204), r.text
    return r.json() if r.status_code in (200, 201) else None


async def test_timeout_armed_at_a_loaded_aggregates_time(
    app: ServiceClient, clock: VirtualClock
) -> None:
    starts = START + timedelta(hours=3)
    created = await ok(
        await app.post("/api/appointments", json={"patient": "Ada", "startsAt": iso(starts)})
    )
    a = created["id"]
    # the local `later` is what the call of the private `moveTo` receives
    later = START + timedelta(hours=2)
    await ok(await app.post(f"/api/appointments/{a}/reschedule", json={"at": iso(later)}))
    got = await ok(await app.get(f"/api/appointments/{a}"))
    assert datetime.fromisoformat(got["startsAt"]) == later

    await ok(await app.post("/api/workflows/reminder", json={"appointment": a}))
    inst = await ok(await app.get(f"/api/workflows/reminder/instances/{a}"))
    armed = [(t["name"], datetime.fromisoformat(t["dueAt"])) for t in inst["timeouts"]]
    assert (inst["sent"], armed) == (0, [("remind", later)])

    assert await clock.advance(timedelta(hours=1, minutes=59)) == 0
    assert await clock.advance(timedelta(minutes=1)) == 1  # fires at the appointment's time
    inst = await ok(await app.get(f"/api/workflows/reminder/instances/{a}"))
    assert (inst["sent"], inst["timeouts"]) == (1, [])
    got = await ok(await app.get(f"/api/appointments/{a}"))
    assert got["reminded"] == 1
