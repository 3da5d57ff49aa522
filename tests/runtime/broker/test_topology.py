"""Orders and Inventory as two services on two databases, connected by one broker: events cross
in both directions, each reaction is applied exactly once under crashes, failures, replicas and
a broker outage, and a service whose channel could never deliver does not start."""

from __future__ import annotations

from typing import Any

import pytest

from loom.testing import ServiceClient, settle_all

from .conftest import INVENTORY, ORDERS, Topology, facts

RESERVE = "Inventory.reserveStock.on(Orders.OrderPlaced)"
MARK = "Orders.onReserved.on(Inventory.StockReserved)"


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


async def stock(inventory: ServiceClient, sku: str) -> None:
    await ok(await inventory.post("/api/stocks", json={"sku": sku}), 201)


async def place(orders: ServiceClient, sku: str = "lamp", quantity: int = 1) -> str:
    body = {"sku": sku, "quantity": quantity}
    return str(await ok(await orders.post("/api/workflows/place_order", json=body)))


async def items(client: ServiceClient, path: str) -> list[dict[str, Any]]:
    page = await ok(await client.get(f"{path}?limit=500"))
    assert page["total"] == len(page["items"])
    return list(page["items"])


async def reservations_by_order(inventory: ServiceClient) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in await items(inventory, "/api/reservations"):
        counts[r["order"]] = counts.get(r["order"], 0) + 1
    return counts


async def pair(topology: Topology, urls: tuple[str, str]) -> tuple[ServiceClient, ServiceClient]:
    orders = await topology.start(ORDERS, urls[0])
    inventory = await topology.start(INVENTORY, urls[1])
    return orders, inventory


async def test_events_cross_both_ways_and_apply_once(
    topology: Topology, two_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, two_urls)
    await stock(inventory, "lamp")
    placed = [await place(orders) for _ in range(5)]
    await settle_all([orders, inventory])
    counts = await reservations_by_order(inventory)
    marked = {o: (await ok(await orders.get(f"/api/orders/{o}"))) for o in placed}
    print(
        f"reservations per order: {sorted(counts.values())}; "
        f"marks per order: {sorted(m['reservations'] for m in marked.values())}"
    )
    assert counts == {o: 1 for o in placed}
    assert {o: (m["status"], m["reservations"]) for o, m in marked.items()} == {
        o: ("Reserved", 1) for o in placed
    }
    # each side applied what the other published; nothing is left in either outbox
    assert len(facts(caplog, "event_handled", handler=RESERVE)) == 5
    assert len(facts(caplog, "event_handled", handler=MARK)) == 5
    for client in (orders, inventory):
        assert await client.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}
