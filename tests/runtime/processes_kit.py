"""Helpers for the process tests: the Scheduling sample running under a virtual clock."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeGuard
from uuid import UUID

import httpx
import pytest

from loom.runtime import Service
from loom.runtime.processes import Decision, Timeout
from loom.testing._clock import VirtualClock

from . import processes_service

START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


class Reminder:
    """A process with no state to speak of: its steps only arm "remind"."""

    name: ClassVar[str] = "Test.Reminder"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[dict[str, int]]:
        return isinstance(value, dict)


def arm(after: timedelta) -> Any:
    """A step arming "remind" `after` from now."""
    return lambda current: Decision({}, timeouts=[Timeout("remind", after=after)])


@dataclass
class Running:
    client: httpx.AsyncClient
    service: Service
    clock: VirtualClock
    app: Any

    async def request(self, minutes: int, slot: str = "mon-9") -> UUID:
        r = await self.client.post(
            "/api/workflows/request_appointment",
            json={"slot": slot, "confirm_within_minutes": minutes},
        )
        assert r.status_code == 200, r.text
        return UUID(r.json())

    async def hold(self, slot: str = "mon-10") -> UUID:
        r = await self.client.post("/api/workflows/hold_slot", json={"slot": slot})
        assert r.status_code == 200, r.text
        return UUID(r.json())

    async def status(self, appointment: UUID) -> str:
        r = await self.client.get(f"/api/appointments/{appointment}")
        assert r.status_code == 200, r.text
        return str(r.json()["status"])

    async def instance(self, kind: str, key: UUID) -> dict[str, Any]:
        r = await self.client.get(f"/api/processes/{kind}/{key}")
        assert r.status_code == 200, r.text
        return dict(r.json())


@asynccontextmanager
async def running(database_url: str, **options: Any) -> AsyncIterator[Running]:
    """The Scheduling sample (lifespan included) with a client, under a virtual clock."""
    processes_service.SWEPT.clear()
    processes_service.FAILING.clear()
    with VirtualClock(start=START) as clock:
        app = processes_service.build_app(database_url, **options)
        async with app.router.lifespan_context(app):
            service: Service = app.state.loom
            clock.attach(service)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as c:
                yield Running(c, service, clock, app)


def lines(caplog: pytest.LogCaptureFixture, *facts: str) -> list[dict[str, Any]]:
    """The `loom.events` JSON lines logged so far (only `facts` when given)."""
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [line for line in found if not facts or line["event"] in facts]
