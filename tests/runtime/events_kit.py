"""Helpers for the event tests: a running events service, a clock the test moves, log lines."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
import pytest
from sqlalchemy import func, select

from loom.runtime import Service, clock
from loom.runtime.messaging.outbox import outbox

from . import events_service


@dataclass
class Running:
    client: httpx.AsyncClient
    service: Service
    app: Any

    async def product(self, available: int) -> UUID:
        r = await self.client.post("/api/products", json={"sku": "SKU-1", "available": available})
        assert r.status_code == 200, r.text
        return UUID(r.json())

    async def place(self, product: UUID, qty: int = 1, total: str = "12.50", **kw: Any) -> UUID:
        r = await self.client.post(
            "/api/workflows/place_order",
            json={"product": str(product), "qty": qty, "total": total},
            **kw,
        )
        assert r.status_code == 200, r.text
        return UUID(r.json())

    async def stock(self, product: UUID) -> tuple[int, int]:
        """(available, reserved)"""
        r = await self.client.get(f"/api/products/{product}")
        assert r.status_code == 200, r.text
        return r.json()["available"], r.json()["reserved"]

    async def reservations(self, product: UUID) -> list[UUID]:
        r = await self.client.get(f"/api/products/{product}/reservations")
        assert r.status_code == 200, r.text
        return [UUID(x) for x in r.json()]

    async def order_status(self, order: UUID) -> str:
        r = await self.client.get(f"/api/orders/{order}")
        assert r.status_code == 200, r.text
        return str(r.json()["status"])

    async def outbox_rows(self) -> list[Any]:
        async with self.service.engine.connect() as conn:
            return list((await conn.execute(select(outbox).order_by(outbox.c.event_id))).all())

    async def outbox_count(self) -> int:
        async with self.service.engine.connect() as conn:
            return int((await conn.execute(select(func.count()).select_from(outbox))).scalar_one())


@asynccontextmanager
async def running(database_url: str, **options: Any) -> AsyncIterator[Running]:
    """The events service with its lifespan (schema, wiring, relay if asked) and a client."""
    app = events_service.build_app(database_url, **options)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
            yield Running(client, app.state.loom, app)


class MovingClock:
    """The runtime clock, `offset` ahead of real time; `advance` moves it forward."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


@contextmanager
def moving_clock() -> Iterator[MovingClock]:
    moving = MovingClock()
    with clock.use_clock(moving):
        yield moving


def lines(caplog: pytest.LogCaptureFixture, *facts: str) -> list[dict[str, Any]]:
    """The `loom.events` JSON lines logged so far (only `facts` when given)."""
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [line for line in found if not facts or line["event"] in facts]


class LogWaiter(logging.Handler):
    """Signals when a `loom.events` line matching `wanted` (a subset of its members) is logged."""

    def __init__(self, **wanted: Any) -> None:
        super().__init__(logging.DEBUG)
        self.wanted = wanted
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        line = json.loads(record.getMessage())
        if all(line.get(k) == v for k, v in self.wanted.items()):
            self.seen.set()


@contextmanager
def log_waiter(**wanted: Any) -> Iterator[LogWaiter]:
    waiter = LogWaiter(**wanted)
    logger = logging.getLogger("loom.events")
    logger.addHandler(waiter)
    try:
        yield waiter
    finally:
        logger.removeHandler(waiter)
