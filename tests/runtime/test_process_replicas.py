"""The scheduler as a service runs it: the background loop (started by hand, or by the app's
lifespan), and a race settled by redelivery on PostgreSQL. How replicas share the stored timeouts
and ticks (claims, leases) is the storage conformance suite's (tests/runtime/storage)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import MetaData

from loom.runtime import Service, Work
from loom.runtime.processes import SqlProcessStore, TimeoutDue

from .processes_kit import Reminder, arm, lines, running
from .test_process_runner import Racing

WAIT = 60  # seconds: bounds a failure only; success returns as soon as the handler ran


@asynccontextmanager
async def replicas(url: str, n: int = 2, **options: Any) -> AsyncIterator[list[Service]]:
    services = [Service.from_url(url, MetaData(), processes=True, **options) for _ in range(n)]
    try:
        for service in services:
            await service.create_schema()
        yield services
    finally:
        for service in services:
            await service.dispose()


async def test_the_background_scheduler_fires_without_help(database_url: str) -> None:
    """Real time: the loop is woken by the step that arms a timeout due now, and sleeps until
    the next one is due."""
    fired: asyncio.Queue[str] = asyncio.Queue()
    async with replicas(database_url, n=1, scheduler_options={"poll_interval": 30}) as (svc,):

        async def handler(due: TimeoutDue, work: Work) -> None:
            fired.put_nowait(due.key)

        svc.timeouts.register(Reminder.name, handler)
        await svc.start_scheduler()
        assert svc.scheduler.running
        await svc.processes.run(Reminder, "now", arm(timedelta(0)))
        assert await asyncio.wait_for(fired.get(), timeout=WAIT) == "now"
        await svc.processes.run(Reminder, "soon", arm(timedelta(milliseconds=200)))
        assert await asyncio.wait_for(fired.get(), timeout=WAIT) == "soon"
        await svc.stop_scheduler()
        assert not svc.scheduler.running


async def test_the_app_lifespan_runs_the_scheduler_when_asked(database_url: str) -> None:
    from . import processes_service

    app = processes_service.build_app(database_url, scheduler=True)
    async with app.router.lifespan_context(app):
        assert app.state.loom.scheduler.running
    assert not app.state.loom.scheduler.running


@pytest.mark.postgres
async def test_a_durable_step_that_loses_a_race_is_redelivered_and_ignored(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Confirmed (a durable delivery) and deadline passed (a timeout) decide on the same
    version of one instance: one wins; the loser fails with a conflict. A losing delivery is
    delivered again and finds the instance ended; a losing timeout was disarmed by the winner,
    so nothing is left to retry."""
    async with running(postgres_url, durable=True) as svc:
        service = svc.service
        service.lock_reads = False  # no row lock on load: only the version decides
        appointment = await svc.request(minutes=32)
        await service.settle()
        assert len((await svc.instance("deadline", appointment))["pending"]) == 1
        # Racing from before the confirmation: the relay may deliver "confirmed" at once, and a
        # delivery loaded before the swap would not race (seen under load: no conflict at all).
        service.processes.store = Racing(SqlProcessStore(service), 2)
        r = await svc.client.post(f"/api/appointments/{appointment}/confirm")
        assert r.status_code == 204, r.text
        with caplog.at_level(logging.INFO, logger="loom.events"):
            await asyncio.gather(service.settle(), svc.clock.advance(timedelta(minutes=32)))
            service.processes.store = SqlProcessStore(service)
            await svc.clock.advance(timedelta(minutes=5))  # the retries fall due
        facts = ("reactor_failed", "timeout_retry_scheduled", "timeout_stale")
        # The timeout loses either on the version (a conflict) or, when the winner's commit came
        # first, by finding its timer disarmed: both are `timeout_stale`, the second without error.
        failures = [
            x
            for x in lines(caplog, *facts)
            if "ConcurrencyConflict" in x.get("error", "") or x["event"] == "timeout_stale"
        ]
        assert len(failures) == 1, failures  # one step lost
        (ended,) = [x for x in lines(caplog, "process_decided") if x["ended"]]  # one step won
        if failures[0]["event"] == "timeout_stale":
            # the timeout lost to "confirmed", which disarmed it: nothing is left to retry
            assert ended["cancelled"] == ["deadline"]
            assert lines(caplog, "process_ignored_ended") == []
        else:
            # the loser is delivered again, and finds the instance ended
            (ignored,) = lines(caplog, "process_ignored_ended")
            assert ignored["key"] == str(appointment)
        instance = await svc.instance("deadline", appointment)
        assert (instance["ended"], instance["pending"]) == (True, [])
        assert await svc.status(appointment) == "Confirmed"  # confirmed before the deadline
        assert lines(caplog, "timeout_dead_lettered") == []
