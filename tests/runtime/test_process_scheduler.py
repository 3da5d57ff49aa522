"""Durable timeouts end to end, through HTTP against the Scheduling sample, on SQLite and
PostgreSQL, with time moved by the test kit's virtual clock: a deadline fires at its instant and
not before, a confirmation disarms it, a failing handler is retried and dead-lettered, a dead
timeout is listed and redriven like a dead event, and "deposit paid" racing "deadline passed"
has exactly one outcome."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from datetime import timedelta
from uuid import UUID

import pytest

from .processes_kit import START, lines, running
from .processes_service import ConfirmationDeadline

DEADLINE = ConfirmationDeadline.name


async def test_a_deadline_fires_at_its_instant_and_expires_the_appointment(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url) as svc:
        start = svc.clock.now()
        with caplog.at_level(logging.INFO, logger="loom.events"):
            r = await svc.client.post(
                "/api/workflows/request_appointment",
                json={"slot": "mon-9", "confirm_within_minutes": 32},
                headers={"X-Correlation-Id": "booking-42"},
            )
            appointment = UUID(r.json())
            instance = await svc.instance("deadline", appointment)
            (pending,) = instance["pending"]
            assert (pending["name"], pending["status"], instance["ended"]) == (
                "deadline",
                "armed",
                False,
            )
            assert pending["due_at"].startswith("2030-01-07T09:32:00")

            await svc.clock.advance(timedelta(minutes=31, seconds=59))
            assert await svc.status(appointment) == "Requested"
            assert lines(caplog, "timeout_fired") == []

            await svc.clock.advance(timedelta(seconds=1))
            assert await svc.status(appointment) == "Expired"
        instance = await svc.instance("deadline", appointment)
        assert (instance["ended"], instance["pending"], instance["version"]) == (True, [], 2)
        (fired,) = lines(caplog, "timeout_fired")
        assert (fired["process"], fired["key"], fired["timeout"]) == (
            DEADLINE,
            str(appointment),
            "deadline",
        )
        assert fired["correlation_id"] == "booking-42"  # the chain keeps the request's id
        (decided,) = [x for x in lines(caplog, "process_decided") if x["ended"]]
        assert decided["commands"] == ["ExpireAppointment"]
        assert svc.clock.now() - start == timedelta(minutes=32)


async def test_confirming_in_time_disarms_the_deadline_and_ends_the_instance(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url) as svc:
        appointment = await svc.request(minutes=32)
        await svc.clock.advance(timedelta(minutes=10))
        r = await svc.client.post(f"/api/appointments/{appointment}/confirm")
        assert r.status_code == 204, r.text
        instance = await svc.instance("deadline", appointment)
        assert (instance["ended"], instance["pending"]) == (True, [])
        with caplog.at_level(logging.INFO, logger="loom.events"):
            await svc.clock.advance(timedelta(hours=2))
        assert await svc.status(appointment) == "Confirmed"
        assert lines(caplog, "timeout_fired", "timeout_stale") == []


async def test_a_failing_timeout_is_retried_dead_lettered_listed_and_redriven(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from . import processes_service

    async with running(database_url) as svc:
        appointment = await svc.request(minutes=32)
        processes_service.FAILING.add(DEADLINE)
        with caplog.at_level(logging.INFO, logger="loom.events"):
            await svc.clock.advance(timedelta(minutes=33))
            retries = lines(caplog, "timeout_retry_scheduled")
            assert [x["attempt"] for x in retries] == [1, 2]
            assert retries[0]["retry_at"].startswith("2030-01-07T09:32:10")  # backoff: 10 s
            (dead,) = lines(caplog, "timeout_dead_lettered")
            assert dead["attempt"] == 3 and dead["error"] == "RuntimeError: the calendar is down"
            assert await svc.status(appointment) == "Requested"

            (pending,) = (await svc.instance("deadline", appointment))["pending"]
            assert (pending["status"], pending["attempts"]) == ("dead", 3)
            page = (await svc.client.get("/api/admin/dead-letters")).json()
            assert page["total"] == 1
            (item,) = page["items"]
            assert item["kind"] == "timeout" and item["job_id"] == dead["job_id"]
            assert (item["process"], item["key"], item["timeout"]) == (
                DEADLINE,
                str(appointment),
                "deadline",
            )
            assert item["attempts"] == 3
            assert item["last_error"] == "RuntimeError: the calendar is down"
            only_events = await svc.client.get("/api/admin/dead-letters?kind=event")
            assert only_events.json()["total"] == 0
            # a dead timeout stays put
            assert await svc.clock.advance(timedelta(hours=1)) == 0
            assert await svc.status(appointment) == "Requested"

            processes_service.FAILING.clear()
            r = await svc.client.post(f"/api/admin/dead-letters/{item['job_id']}/redrive")
            assert r.status_code == 204, r.text
            (redriven,) = lines(caplog, "timeout_redriven")
            assert redriven["job_id"] == item["job_id"]
            await svc.clock.run_due()
        assert await svc.status(appointment) == "Expired"
        assert (await svc.client.get("/api/admin/dead-letters")).json()["total"] == 0
        again = await svc.client.post(f"/api/admin/dead-letters/{item['job_id']}/redrive")
        assert again.status_code == 404


async def test_the_cli_lists_and_redrives_dead_timeouts(database_url: str) -> None:
    from . import processes_service

    async with running(database_url) as svc:
        appointment = await svc.request(minutes=32)
        processes_service.FAILING.add(DEADLINE)
        await svc.clock.advance(timedelta(minutes=40))
        (dead,) = await svc.service.timers.dead_letters()

        def loom(*args: str) -> subprocess.CompletedProcess[str]:
            command = [sys.executable, "-m", "loom.cli", "dead-letters", *args]
            url = ["--database-url", database_url]
            return subprocess.run(
                command + url, capture_output=True, text=True, timeout=120, check=False
            )

        listed = loom("list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.splitlines()[0] == "1 dead letter(s); 1-1:"
        assert f"timeout  {dead.job_id}  {DEADLINE}.deadline  key={appointment}" in listed.stdout
        assert "last error: RuntimeError: the calendar is down" in listed.stdout
        assert loom("list", "--kind", "event").stdout.strip() == "no dead letters"

        processes_service.FAILING.clear()
        redriven = loom("redrive", str(dead.job_id))
        assert redriven.returncode == 0, redriven.stderr
        assert (
            redriven.stdout.strip()
            == f"redriven {dead.job_id}: the service's scheduler fires it again"
        )
        await svc.clock.run_due()
        assert await svc.status(appointment) == "Expired"


async def test_deposit_paid_and_deadline_passed_together_have_exactly_one_outcome(
    database_url: str,
) -> None:
    async with running(database_url) as svc:
        outcomes = []
        for i in range(6):
            hold = await svc.hold(slot=f"tue-{i}")
            pay, _ = await asyncio.gather(
                svc.client.post(f"/api/payments/{hold}/deposit"),
                svc.clock.advance(timedelta(minutes=15)),
            )
            assert pay.status_code == 200, pay.text
            status = await svc.status(hold)
            paid_first = pay.json()["outcome"] == "decided"
            # the loser never acted: a paid hold is confirmed, an unpaid one released
            assert status == ("Confirmed" if paid_first else "Released")
            instance = await svc.instance("deposit", hold)
            assert (instance["ended"], instance["pending"]) == (True, [])
            assert instance["state"]["paid"] is paid_first
            outcomes.append(status)
        assert set(outcomes) <= {"Confirmed", "Released"}


async def test_the_sweep_runs_every_five_minutes_and_catches_up_once_after_downtime(
    database_url: str,
) -> None:
    from . import processes_service

    async with running(database_url, sweep=True) as svc:
        appointment = await svc.request(minutes=7)
        processes_service.FAILING.add(DEADLINE)  # only the sweep can expire it now
        await svc.clock.advance(timedelta(minutes=5))
        assert [t.coalesced for t in processes_service.SWEPT] == [1]
        assert await svc.status(appointment) == "Requested"
        await svc.clock.advance(timedelta(minutes=5))  # the 10-minute sweep finds it overdue
        assert await svc.status(appointment) == "Expired"
        assert len(processes_service.SWEPT) == 2

        processes_service.SWEPT.clear()
        await svc.clock.jump(timedelta(hours=1, minutes=2))  # down for an hour: one run
        (tick,) = processes_service.SWEPT
        # the first missed tick (09:15) stands for the twelve due by 10:12
        assert (tick.scheduled_at, tick.coalesced) == (START + timedelta(minutes=15), 12)
        # and the schedule continues from now
        await svc.clock.advance(timedelta(minutes=4, seconds=59))
        assert len(processes_service.SWEPT) == 1
        await svc.clock.advance(timedelta(seconds=1))
        assert len(processes_service.SWEPT) == 2
