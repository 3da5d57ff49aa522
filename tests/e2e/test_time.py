"""Time in the language (docs/language.md, "Time"), over HTTP on SQLite and PostgreSQL with a
virtual clock: a default `now() + 10m` stored and answered, `today()`, durations on the wire
(ISO 8601, refused when months or malformed), dates moved by days across month ends and leap days,
`dateOf` / `startOf`, `schedule … after minutes(n)` and `schedule … at startsAt - 1d` firing at
their virtual instants."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve

MODEL = [Path(__file__).parent / "models/hotel_time.loom"]
START = datetime(2028, 2, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def app(database_url: str, clock: VirtualClock) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url, clock=clock) as client:
        yield client


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def ok(r: Any) -> Any:
    assert r.status_code in (200, 204), r.text
    return r.json() if r.status_code == 200 else None


async def hold(
    c: ServiceClient, night: str = "2028-02-28", starts: datetime | None = None, minutes: int = 20
) -> str:
    body = {
        "guest": "Ada",
        "night": night,
        "startsAt": iso(starts or START + timedelta(days=3)),
        "holdMinutes": minutes,
    }
    return str(await ok(await c.post("/api/workflows/hold_booking", json=body)))


async def booking(c: ServiceClient, id: str) -> dict[str, Any]:
    got: dict[str, Any] = await ok(await c.get(f"/api/bookings/{id}"))
    return got


async def test_defaults_now_plus_duration_and_today(app: ServiceClient) -> None:
    b = await booking(app, await hold(app))
    assert instant(b["holdUntil"]) == START + timedelta(minutes=10)
    assert b["bookedOn"] == "2028-02-01"
    assert b["stay"] == "P1D"
    assert b["holdEndsOn"] == "2028-02-01"
    assert b["notices"] == ["P1D", "PT1H30M"]


async def test_durations_in_lists_and_value_objects(app: ServiceClient) -> None:
    id = await hold(app)
    body = {"opens": "2028-02-04T14:00:00+01:00", "length": "PT2H30M"}
    await ok(await app.post(f"/api/bookings/{id}/set_check_in", json=body))
    b = await booking(app, id)
    assert b["checkIn"] == {"opens": "2028-02-04T13:00:00Z", "length": "PT2H30M"}
    assert b["notices"] == ["PT2H30M", "PT5H"]


async def test_today_follows_the_virtual_clock(app: ServiceClient, clock: VirtualClock) -> None:
    await clock.advance(timedelta(days=1, hours=15))  # past midnight UTC
    b = await booking(app, await hold(app))
    assert b["bookedOn"] == "2028-02-03"
    assert instant(b["holdUntil"]) == START + timedelta(days=1, hours=15, minutes=10)


@pytest.mark.parametrize(
    ("night", "next_night"),
    [
        ("2026-01-31", "2026-02-01"),  # a month end
        ("2028-02-28", "2028-02-29"),  # a leap day
        ("2027-02-28", "2027-03-01"),  # no leap day
        ("2028-12-31", "2029-01-01"),  # a year end
    ],
)
async def test_a_day_after_is_the_next_calendar_day(
    app: ServiceClient, night: str, next_night: str
) -> None:
    b = await booking(app, await hold(app, night=night))
    assert b["nextNight"] == next_night
    assert b["nightStarts"] == f"{night}T00:00:00Z"


async def test_durations_round_trip_iso_8601(app: ServiceClient) -> None:
    id = await hold(app)
    await ok(await app.post(f"/api/bookings/{id}/extend", json={"by": "PT10M"}))
    b = await booking(app, id)
    assert instant(b["holdUntil"]) == START + timedelta(minutes=20)
    await ok(await app.post(f"/api/bookings/{id}/extend", json={"by": "P1DT2H30M0.5S"}))
    b = await booking(app, id)
    assert instant(b["holdUntil"]) == START + timedelta(days=1, hours=2, minutes=50, seconds=0.5)
    await ok(await app.post(f"/api/bookings/{id}/stay_nights", json={"nights": 3}))
    b = await booking(app, id)
    assert (b["stay"], b["lastNight"]) == ("P3D", "2028-03-01")
    assert instant(b["leavesAt"]) == START + timedelta(days=6)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("P1M", "months and years are not durations"),
        ("P1Y", "months and years are not durations"),
        ("10 minutes", "not an ISO 8601 duration"),
        ("PT", "not an ISO 8601 duration"),
        (600, "ISO 8601 string"),
    ],
)
async def test_bad_durations_are_422(app: ServiceClient, value: Any, says: str) -> None:
    id = await hold(app)
    r = await app.post(f"/api/bookings/{id}/extend", json={"by": value})
    assert r.status_code == 422, r.text
    assert says in r.text


async def test_a_date_moves_by_whole_days_only(app: ServiceClient) -> None:
    id = await hold(app, night="2026-01-31")
    await ok(await app.post(f"/api/bookings/{id}/move_night", json={"by": "P2D"}))
    assert (await booking(app, id))["night"] == "2026-02-02"
    r = await app.post(f"/api/bookings/{id}/move_night", json={"by": "PT5H"})
    assert r.status_code == 422, r.text
    assert "whole days" in r.json()["detail"]
    assert (await booking(app, id))["night"] == "2026-02-02"


async def test_schedule_after_minutes_n_fires_at_its_instant(
    app: ServiceClient, clock: VirtualClock
) -> None:
    id = await hold(app, minutes=45)
    await clock.advance(timedelta(minutes=44, seconds=59))
    assert (await booking(app, id))["expired"] is False
    await clock.advance(timedelta(seconds=1))
    assert (await booking(app, id))["expired"] is True


async def test_schedule_at_starts_at_minus_a_day(app: ServiceClient, clock: VirtualClock) -> None:
    starts = START + timedelta(days=2, hours=3)
    id = await hold(app, starts=starts)
    await ok(await app.post(f"/api/bookings/{id}/pay"))
    await clock.advance(starts - timedelta(days=1) - START - timedelta(seconds=1))
    assert (await booking(app, id))["reminded"] == 0
    await clock.advance(timedelta(seconds=1))
    b = await booking(app, id)
    assert (b["reminded"], b["expired"], b["paid"]) == (1, False, True)


async def test_criteria_compare_stored_times_and_durations(
    app: ServiceClient, clock: VirtualClock
) -> None:
    first = await hold(app)  # held until START + 10m
    await clock.advance(timedelta(minutes=5))
    second = await hold(app)  # held until START + 15m
    await ok(await app.post(f"/api/bookings/{second}/stay_nights", json={"nights": 3}))
    await clock.advance(timedelta(minutes=10))  # now START + 15m

    async def ids(path: str, **params: str) -> set[str]:
        got = await ok(await app.get(path, params=params))
        return {b["id"] for b in got}

    assert await ids("/api/queries/lapsed", grace="PT4M") == {first}
    assert await ids("/api/queries/lapsed", grace="PT6M") == set()
    assert await ids("/api/queries/lapsed", grace="-PT1M") == {first, second}
    assert await ids("/api/queries/long_stays", least="P2D") == {second}
    assert await ids("/api/queries/long_stays", least="PT1H") == {first, second}
    r = await app.get("/api/queries/long_stays", params={"least": "P1M"})
    assert r.status_code == 422, r.text
