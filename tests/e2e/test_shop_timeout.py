"""The shop example's payment timeout (examples/shop, `workflow PaymentDeadline`), over HTTP on
SQLite and PostgreSQL with a virtual clock: no answer from Payment within 30 minutes, and the
reservation is released and the order cancelled; an answer in time disarms the deadline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve

ROOT = Path(__file__).resolve().parents[2]
SHOP = [ROOT / "examples/shop/shop.loom"]
START = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
TAKE_PAYMENT = "Payment.takePayment.on(Inventory.StockReserved)"


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def shop(database_url: str, clock: VirtualClock) -> AsyncIterator[ServiceClient]:
    async with serve(SHOP, database_url, clock=clock) as client:
        yield client


def payment_is_down(c: ServiceClient) -> None:
    """Payment never answers: its reaction to StockReserved is gone (a provider outage)."""
    reserved = c.module("inventory.domain").StockReserved
    events = c.service.events
    for sub in events.handlers_for(reserved):
        if sub.name == TAKE_PAYMENT:
            events.unsubscribe(reserved, sub.handler)


async def get(c: ServiceClient, path: str) -> Any:
    r = await c.get(path)
    assert r.status_code == 200, r.text
    return r.json()


async def place(c: ServiceClient) -> str:
    body = {"sku": "lamp", "quantity": 2, "failPayment": False}
    r = await c.post("/api/workflows/place_order", json=body)
    assert r.status_code == 200, r.text
    return str(r.json())


async def test_no_payment_answer_releases_and_cancels(
    shop: ServiceClient, clock: VirtualClock
) -> None:
    payment_is_down(shop)
    order = await place(shop)
    deadline = await get(shop, f"/api/workflows/payment_deadline/instances/{order}")
    assert deadline["ended"] is False
    assert [(t["name"], t["dueAt"]) for t in deadline["timeouts"]] == [
        ("payment", "2030-03-01T12:30:00Z")
    ]
    await clock.advance(timedelta(minutes=29))
    assert (await get(shop, f"/api/orders/{order}"))["status"] == "Pending"
    await clock.advance(timedelta(minutes=1))
    assert (await get(shop, f"/api/orders/{order}"))["status"] == "Cancelled"
    reservations = await get(shop, "/api/reservations")
    assert [(r["order"], r["released"]) for r in reservations["items"]] == [(order, True)]
    assert (await get(shop, "/api/charges"))["items"] == []
    deadline = await get(shop, f"/api/workflows/payment_deadline/instances/{order}")
    assert (deadline["ended"], deadline["timeouts"]) == (True, [])


async def test_payment_in_time_disarms_the_deadline(
    shop: ServiceClient, clock: VirtualClock
) -> None:
    order = await place(shop)
    deadline = await get(shop, f"/api/workflows/payment_deadline/instances/{order}")
    assert (deadline["ended"], deadline["timeouts"]) == (True, [])
    await clock.advance(timedelta(hours=1))
    assert (await get(shop, f"/api/orders/{order}"))["status"] == "Paid"
    reservations = await get(shop, "/api/reservations")
    assert [(r["order"], r["released"]) for r in reservations["items"]] == [(order, False)]
