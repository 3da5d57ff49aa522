"""The process gauges of `GET /metrics` over HTTP, on SQLite and PostgreSQL
(docs/observability.md#metrics): timeouts armed and how late the earliest is, read at scrape time
on a clock the test moves, and the instances of a process workflow by state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from loom.testing import ServiceClient, serve
from tests.e2e.test_timers_admin import DESK, START, Clock, now, open_ticket
from tests.scrape import sample, scrape

__all__ = ["now"]  # the clock fixture, used here by name

FOLLOW_UP = "Desk.FollowUp"


@pytest.fixture
async def desk(
    database_url: str, now: Clock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the test runs the scheduler's rounds
    async with serve(DESK, database_url) as client:
        yield client


async def gauges(c: ServiceClient) -> tuple[float | None, ...]:
    s = await scrape(c)
    return (
        sample(s, "loom_timers_pending"),
        sample(s, "loom_timers_overdue_seconds"),
        sample(s, "loom_process_instances", process=FOLLOW_UP, state="running"),
        sample(s, "loom_process_instances", process=FOLLOW_UP, state="completed"),
        sample(s, "loom_dead_letters", kind="timeout"),
    )


async def test_timers_and_instances_are_read_at_scrape_time(
    desk: ServiceClient, now: Clock
) -> None:
    assert await gauges(desk) == (0, 0, 0, 0, 0)
    for _ in range(2):
        await open_ticket(desk)
    assert await gauges(desk) == (2, 0, 2, 0, 0)
    now.at = START + timedelta(hours=1, minutes=30)  # both due half an hour ago, not fired
    assert await gauges(desk) == (2, 1800, 2, 0, 0)
    assert await desk.service.scheduler.run_due() >= 2
    assert await gauges(desk) == (0, 0, 0, 2, 0)
