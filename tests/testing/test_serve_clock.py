"""`serve(model, url, clock=VirtualClock(...))`: the service runs on the virtual clock for the
block (installed and removed by `serve` unless the test installed it), its background scheduler
is off, and only `advance` fires its timeouts (examples/scheduling: a held slot's 15-minute
deposit deadline)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from loom.runtime import clock as runtime_clock
from loom.testing import VirtualClock, serve

ROOT = Path(__file__).resolve().parents[2]
MODEL = [ROOT / "examples/scheduling/scheduling.loom"]
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


async def test_serve_installs_and_drives_the_clock(database_url: str) -> None:
    clock = VirtualClock(start=START)
    before = os.environ.get("LOOM_SCHEDULER")
    assert not clock.installed
    async with serve(MODEL, database_url, clock=clock) as client:
        assert clock.installed and clock.services == [client.service]
        assert runtime_clock.now() == START
        assert not client.service.scheduler.running  # the clock drives it
        body = {"patient": "Ada", "practitioner": "Dr Who", "startsAt": "2030-01-08T09:00:00Z"}
        held = (await client.post("/api/workflows/hold_slot", json=body)).json()
        assert await clock.advance(timedelta(minutes=14)) == 0
        status = (await client.get(f"/api/appointments/{held}")).json()["status"]
        assert status == "AwaitingDeposit"
        assert await clock.advance(timedelta(minutes=1)) == 1  # the deadline, at its instant
        status = (await client.get(f"/api/appointments/{held}")).json()["status"]
        print(f"held slot after its deposit deadline: {status}")
        assert status == "Cancelled"
    assert not clock.installed and clock.services == []
    assert os.environ.get("LOOM_SCHEDULER") == before


async def test_a_clock_the_test_installed_stays_installed(database_url: str) -> None:
    with VirtualClock(start=START) as clock:
        async with serve(MODEL, database_url, clock=clock):
            assert clock.installed
        assert clock.installed and clock.services == []
    assert not clock.installed
