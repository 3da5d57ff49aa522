"""The shop example (examples/shop): the choreography seed's orders / inventory / payment flow as
three contexts, over HTTP on SQLite and PostgreSQL.

Every event of the flow rides a durable channel, so each hop is an outbox row delivered by the
relay. The test kit's client awaits `service.settle()` after each request: the POST returns after
the whole chain has run, and the follow-up GETs see the terminal state, with no sleeps or polling.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import column, func, select, table

from loom.testing import ServiceClient, serve

ROOT = Path(__file__).resolve().parents[2]
SHOP = [ROOT / "examples/shop/shop.loom"]
# the runtime's outbox, read as a plain table (its columns are the runtime's contract)
outbox_table = table("__loom_outbox", column("event_type"), column("status"))


@pytest.fixture
async def shop(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(SHOP, database_url) as client:
        yield client


async def place(c: ServiceClient, *, fail_payment: bool, quantity: int = 2) -> str:
    body = {"sku": "lamp", "quantity": quantity, "failPayment": fail_payment}
    r = await c.post("/api/workflows/place_order", json=body)
    assert r.status_code == 200, r.text
    return str(r.json())


async def get(c: ServiceClient, path: str) -> Any:
    r = await c.get(path)
    assert r.status_code == 200, r.text
    return r.json()


async def outbox(c: ServiceClient) -> list[tuple[str, str]]:
    """(event_type, status) of every row left in the outbox."""
    async with c.service.engine.connect() as conn:
        rows = await conn.execute(select(outbox_table.c.event_type, outbox_table.c.status))
        return sorted((r.event_type, r.status) for r in rows)


async def test_happy_path_ends_paid(shop: ServiceClient) -> None:
    order = await place(shop, fail_payment=False)
    # The POST returned after every hop: reserve, charge, mark paid.
    got = await get(shop, f"/api/orders/{order}")
    assert (got["status"], got["version"]) == ("Paid", 2)
    reservations = await get(shop, "/api/reservations")
    assert [(r["order"], r["released"]) for r in reservations["items"]] == [(order, False)]
    charges = await get(shop, "/api/charges")
    assert [(ch["order"], ch["ok"]) for ch in charges["items"]] == [(order, True)]
    progress = await get(shop, f"/api/projections/order_progress/{order}")
    assert progress == {"order": order, "version": 3, "steps": 3, "last": "paid"}
    # `work` retention deletes a delivered row; the Payment channel keeps its (`log`).
    assert await outbox(shop) == [("Payment.PaymentSucceeded", "delivered")]


async def test_failed_payment_is_compensated(shop: ServiceClient) -> None:
    order = await place(shop, fail_payment=True)
    got = await get(shop, f"/api/orders/{order}")
    assert (got["status"], got["version"]) == ("Cancelled", 2)
    reservations = await get(shop, "/api/reservations")
    assert [(r["order"], r["released"]) for r in reservations["items"]] == [(order, True)]
    charges = await get(shop, "/api/charges")
    assert [(ch["order"], ch["ok"]) for ch in charges["items"]] == [(order, False)]
    progress = await get(shop, f"/api/projections/order_progress/{order}")
    assert (progress["steps"], progress["last"]) == (5, "cancelled")
    assert await outbox(shop) == [
        ("Payment.OrderCancelled", "delivered"),
        ("Payment.PaymentFailed", "delivered"),
    ]


async def test_both_paths_side_by_side(shop: ServiceClient) -> None:
    paid = await place(shop, fail_payment=False)
    cancelled = await place(shop, fail_payment=True, quantity=1)
    assert (await get(shop, f"/api/orders/{paid}"))["status"] == "Paid"
    assert (await get(shop, f"/api/orders/{cancelled}"))["status"] == "Cancelled"
    page = await get(shop, "/api/projections/order_progress")
    assert page["total"] == 2
    assert {row["order"]: row["last"] for row in page["items"]} == {
        paid: "paid",
        cancelled: "cancelled",
    }


async def test_without_settling_the_request_returns_before_the_relay(database_url: str) -> None:
    """The same request with the kit's settling off: the order is placed and its event waits in
    the outbox; settling delivers the whole chain."""
    async with serve(SHOP, database_url, settle=False) as c:
        await c.service.stop_relay()  # no background delivery either: the test drives it
        order = await place(c, fail_payment=False)
        assert (await get(c, f"/api/orders/{order}"))["status"] == "Pending"
        assert await outbox(c) == [("Orders.OrderPlaced", "pending")]
        await c.settle()
        assert (await get(c, f"/api/orders/{order}"))["status"] == "Paid"
        async with c.service.engine.connect() as conn:
            pending = await conn.scalar(
                select(func.count())
                .select_from(outbox_table)
                .where(outbox_table.c.status == "pending")
            )
        assert pending == 0


async def test_routes_of_the_example(shop: ServiceClient) -> None:
    spec = await get(shop, "/openapi.json")
    paths = spec["paths"]
    assert "/api/projections/order_progress/{key}" in paths
    assert "/api/projections/order_progress" in paths
    # Workflows that only react to events have no command route.
    assert "/api/workflows/place_order" in paths
    for reactive in ("settle_order", "reserve_stock", "take_payment"):
        assert f"/api/workflows/{reactive}" not in paths
    r = await shop.get(f"/api/projections/order_progress/{'0' * 8}-0000-0000-0000-{'0' * 12}")
    assert r.status_code == 404 and r.json()["type"] == "urn:loom:problem:not-found"


async def test_read_only_status_is_out_of_the_crudish_routes_reach(shop: ServiceClient) -> None:
    """`status: OrderStatus readOnly = Pending`: a client cannot set `Paid` past `markPaid`'s
    gate, through the crudish POST nor the PATCH; the order starts Pending and nothing is saved
    by a refused request."""
    c = shop
    body = {"sku": "lamp", "quantity": 1, "status": "Paid"}
    r = await c.post("/api/orders", json=body)
    assert r.status_code == 422, r.text
    errors = r.json()["errors"]
    assert [e["message"] for e in errors if "status" in e["path"]] == [
        "status is read-only: only the aggregate's own operations change it"
    ], errors
    assert (await get(c, "/api/orders"))["total"] == 0
    r = await c.post("/api/orders", json={"sku": "lamp", "quantity": 1})
    assert r.status_code == 201, r.text
    order = r.json()["id"]
    assert r.json()["status"] == "Pending"
    r = await c.patch(f"/api/orders/{order}", json={"status": "Paid", "quantity": 3})
    assert r.status_code == 422, r.text
    assert "read-only" in str(r.json()["errors"])
    got = await get(c, f"/api/orders/{order}")
    assert (got["status"], got["quantity"], got["version"]) == ("Pending", 1, 1)
    r = await c.patch(f"/api/orders/{order}", json={"quantity": 3})
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["quantity"]) == ("Pending", 3)
    # the document says so: the inputs have no `status`
    schemas = (await c.get("/openapi.json")).json()["components"]["schemas"]
    assert "status" not in schemas["OrderCreateInput"]["properties"]
    assert "status" not in schemas["OrderUpdateInput"]["properties"]
