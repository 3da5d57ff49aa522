"""The scheduling model, tested through its HTTP API with Loom's test kit (`loom.testing`).

`serve` runs the service in this process on a throwaway SQLite file, on a virtual clock: time moves
only when the test says so (`clock.advance`), and the timeouts that fall due meanwhile fire then,
so a deadline an hour away is tested at once. Run with `pytest`."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from loom.testing import ServiceClient, VirtualClock, serve

MODEL = sorted(Path(__file__).parent.glob("*.loom"))
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


async def request(client: ServiceClient) -> str:
    body = {
        "patient": "Ada",
        "practitioner": "Dr Who",
        "startsAt": (START + timedelta(days=1)).isoformat(),
        "confirmBefore": (START + timedelta(hours=1)).isoformat(),
    }
    r = await client.post("/api/workflows/request_appointment", json=body)
    assert r.status_code == 200, r.text
    return str(r.json())


async def status(client: ServiceClient, appointment: str) -> str:
    r = await client.get(f"/api/appointments/{appointment}")
    assert r.status_code == 200, r.text
    return str(r.json()["status"])


async def deadlines(database_url: str) -> None:
    with VirtualClock(start=START) as clock:
        async with serve(MODEL, database_url, clock=clock) as client:
            confirmed = await request(client)
            r = await client.post(f"/api/appointments/{confirmed}/confirm")
            assert r.status_code == 204, r.text
            forgotten = await request(client)

            await clock.advance(timedelta(minutes=59))
            assert await status(client, forgotten) == "Requested"
            await clock.advance(timedelta(minutes=1))  # its confirmation deadline
            assert await status(client, forgotten) == "Expired"
            assert await status(client, confirmed) == "Confirmed"


def test_an_appointment_not_confirmed_in_time_expires(tmp_path: Path) -> None:
    asyncio.run(deadlines(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"))
