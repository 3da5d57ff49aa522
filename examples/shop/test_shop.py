"""The shop model, tested through its HTTP API with Loom's test kit (`loom.testing`).

`serve` runs the whole shop (its three contexts) as one service in this process, on a throwaway
SQLite file. Each request returns once every event it caused has been delivered and handled, so
the GETs after it see the end of the whole choreography, with no waiting. Run with `pytest`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from loom.testing import ServiceClient, serve

# the domain alone: deployables.loom says how it is split into services (`loom up`), and the test
# kit serves the whole model as one
MODEL = [Path(__file__).parent / "shop.loom"]


async def place(client: ServiceClient, *, fail_payment: bool) -> str:
    body = {"sku": "lamp", "quantity": 2, "failPayment": fail_payment}
    r = await client.post("/api/workflows/place_order", json=body)
    assert r.status_code == 200, r.text
    return str(r.json())


async def get(client: ServiceClient, path: str) -> Any:
    r = await client.get(path)
    assert r.status_code == 200, r.text
    return r.json()


async def orders(database_url: str) -> None:
    async with serve(MODEL, database_url) as client:
        paid = await place(client, fail_payment=False)
        assert (await get(client, f"/api/orders/{paid}"))["status"] == "Paid"

        # a refused payment is compensated: the order is cancelled, its reservation released
        cancelled = await place(client, fail_payment=True)
        assert (await get(client, f"/api/orders/{cancelled}"))["status"] == "Cancelled"
        reservations = await get(client, "/api/reservations")
        released = {r["order"]: r["released"] for r in reservations["items"]}
        assert released == {paid: False, cancelled: True}


def test_an_order_is_paid_or_compensated(tmp_path: Path) -> None:
    asyncio.run(orders(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"))
