"""The seed's Sales context (unchanged) plus onboarding.loom, over HTTP on both databases."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from loom.testing import ServiceClient

from .test_banking import assert_problem


async def register(c: ServiceClient, name: str, credit: Any) -> str:
    r = await c.post("/api/workflows/register_customer", json={"name": name, "creditLimit": credit})
    assert r.status_code == 200, r.text
    return str(r.json())


async def customer(c: ServiceClient, customer_id: str) -> dict[str, Any]:
    r = await c.get(f"/api/customers/{customer_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_decimals_never_lose_precision(sales: ServiceClient) -> None:
    as_text = await register(sales, "Ada", "12345678901234567890.123456789")
    as_number = await sales.post(
        "/api/workflows/register_customer",
        content=b'{"name": "Bob", "creditLimit": 0.1000000000000000055511151231257827}',
        headers={"content-type": "application/json"},
    )
    assert as_number.status_code == 200, as_number.text
    assert Decimal((await customer(sales, as_text))["creditLimit"]) == Decimal(
        "12345678901234567890.123456789"
    )
    bob = await customer(sales, as_number.json())
    assert Decimal(bob["creditLimit"]) == Decimal("0.1000000000000000055511151231257827")
    assert bob["display"] == "Bob"  # derived display: string = name


async def test_invariant_refuses_a_creation(sales: ServiceClient) -> None:
    r = await sales.post(
        "/api/workflows/register_customer", json={"name": "Eve", "creditLimit": "-1"}
    )
    body = assert_problem(r, 422, "invariant-failed")
    assert "creditLimit >= 0" in body["rule"]
    assert (await sales.get("/api/customers")).json()["total"] == 0


async def test_place_order_saves_the_order_not_the_customer(sales: ServiceClient) -> None:
    ada = await register(sales, "Ada", "100")
    placed_at = "2026-11-29T10:00:00+00:00"
    r = await sales.post(
        "/api/workflows/place_order", json={"customerId": ada, "placedAt": placed_at}
    )
    assert r.status_code == 204, r.text
    orders = (await sales.get("/api/orders")).json()
    assert orders["total"] == 1
    order = orders["items"][0]
    assert order["customerId"] == ada and order["status"] == "Draft"
    assert order["placedAt"].startswith("2026-11-29T10:00:00")
    assert (await customer(sales, ada))["version"] == 1  # loaded, never operated on: not saved


async def test_place_order_for_a_missing_customer_creates_nothing(sales: ServiceClient) -> None:
    r = await sales.post(
        "/api/workflows/place_order",
        json={"customerId": str(uuid.uuid4()), "placedAt": "2026-11-29T10:00:00Z"},
    )
    body = assert_problem(r, 404, "not-found")
    assert "Customer" in body["detail"]
    assert (await sales.get("/api/orders")).json()["total"] == 0


async def test_order_placed_is_announced_after_commit(sales: ServiceClient) -> None:
    domain = sales.module("sales.domain")
    seen: list[Any] = []

    async def record(event: Any) -> None:
        seen.append(event)

    sales.service.events.subscribe(domain.OrderPlaced, record)
    ada = await register(sales, "Ada", "100")
    await sales.post(
        "/api/workflows/place_order", json={"customerId": ada, "placedAt": "2026-11-29T10:00:00Z"}
    )
    order = (await sales.get("/api/orders")).json()["items"][0]
    assert len(seen) == 1 and str(seen[0].order) == order["id"]


async def test_transfer_credit_moves_credit_atomically(sales: ServiceClient) -> None:
    ada, bob = await register(sales, "Ada", "100.50"), await register(sales, "Bob", "0")
    r = await sales.post(
        "/api/workflows/transfer_credit", json={"src": ada, "dst": bob, "amount": "40.25"}
    )
    assert r.status_code == 204, r.text
    assert Decimal((await customer(sales, ada))["creditLimit"]) == Decimal("60.25")
    assert Decimal((await customer(sales, bob))["creditLimit"]) == Decimal("40.25")

    too_much = await sales.post(
        "/api/workflows/transfer_credit", json={"src": bob, "dst": ada, "amount": "41"}
    )
    body = assert_problem(too_much, 422, "precondition-failed")
    assert "creditLimit >= amount" in body["rule"]
    zero = await sales.post(
        "/api/workflows/transfer_credit", json={"src": ada, "dst": bob, "amount": "0"}
    )
    assert "transferCredit" in assert_problem(zero, 422, "precondition-failed")["rule"]
    assert Decimal((await customer(sales, ada))["creditLimit"]) == Decimal("60.25")
    assert Decimal((await customer(sales, bob))["creditLimit"]) == Decimal("40.25")


async def test_operation_routes_of_the_seed_aggregates(sales: ServiceClient) -> None:
    ada = await register(sales, "Ada", "10")
    r = await sales.post(f"/api/customers/{ada}/add_credit", json={"amount": "2.5"})
    assert r.status_code == 204
    refused = await sales.post(f"/api/customers/{ada}/deduct_credit", json={"amount": "13"})
    assert_problem(refused, 422, "precondition-failed")
    got = await customer(sales, ada)
    assert Decimal(got["creditLimit"]) == Decimal("12.5") and got["version"] == 2
