"""Value objects and payloads over HTTP, on SQLite and PostgreSQL (the model is
tests/lang/data/ok/values_payloads.loom): a value-object field through create / read / update with
an exact decimal inside (on the wire and in storage), invariant refusals, a payload as a whole
workflow body, a payload nested among other parameters, a query payload in the query string,
handlers answering payloads and value objects, and value objects in workflow state."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import select, text

from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_banking import assert_problem

MODEL = [ROOT / "tests/lang/data/ok/values_payloads.loom"]
EXACT = "0.1000000000000000055511151231257827"


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def ok(store: ServiceClient, method: str, path: str, status: int, **kw: Any) -> Any:
    r = await store.request(method, path, **kw)
    assert r.status_code == status, r.text
    return r.json() if r.content else None


def money(amount: str, currency: str = "EUR") -> dict[str, str]:
    return {"amount": amount, "currency": currency}


async def new_product(store: ServiceClient, amount: str = "12.50", **extra: Any) -> dict[str, Any]:
    body = {"name": "lamp", "price": money(amount), **extra}
    got: dict[str, Any] = await ok(store, "POST", "/api/products", 201, json=body)
    return got


# --------------------------------------------------------------------------------------------------
# A value-object field


async def test_value_field_round_trip_keeps_the_decimal_exact(store: ServiceClient) -> None:
    made = await new_product(store, EXACT)
    assert made["price"] == {"amount": EXACT, "currency": "EUR"}
    # defaults: a left-out value-object field takes its declared default, an optional one null
    assert made["listPrice"] == {"amount": "0", "currency": "EUR"}
    assert made["previous"] is None
    pid = made["id"]
    assert await ok(store, "GET", f"/api/products/{pid}", 200) == made

    # stored as JSON text, the decimal as its exact string
    products = store.module("store.tables").products
    async with store.service.engine.connect() as conn:
        raw = await conn.scalar(select(text("price")).select_from(products))
    assert json.loads(raw) == {"amount": EXACT, "currency": "EUR"}

    # a number on input is read without a float: still exact
    body = {"price": {"amount": Decimal("2.675"), "currency": "EUR"}}
    r = await store.patch(
        f"/api/products/{pid}",
        content=json.dumps(body, default=str).replace('"2.675"', "2.675"),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["price"] == money("2.675")
    got = await ok(store, "GET", f"/api/products/{pid}", 200)
    assert (got["price"], got["version"]) == (money("2.675"), 2)

    # the nested object is its own schema in the OpenAPI document
    spec = await ok(store, "GET", "/openapi.json", 200)
    schemas = spec["components"]["schemas"]
    assert schemas["ProductOut"]["properties"]["price"] == {"$ref": "#/components/schemas/MoneyOut"}
    assert set(schemas["MoneyInput"]["properties"]) == {"amount", "currency"}
    assert schemas["MoneyInput"]["required"] == ["amount"]


async def test_value_invariants_refuse_with_422(store: ServiceClient) -> None:
    r = await store.post("/api/products", json={"name": "lamp", "price": money("-1")})
    body = assert_problem(r, 422, "invariant-failed")
    assert body["detail"] == "an amount is never negative"
    assert body["rule"] == "Money: invariant amount >= 0"
    assert (await ok(store, "GET", "/api/products", 200))["total"] == 0

    pid = (await new_product(store))["id"]
    r = await store.patch(f"/api/products/{pid}", json={"price": money("-0.01")})
    assert_problem(r, 422, "invariant-failed")
    r = await store.post(f"/api/products/{pid}/reprice", json={"to": money("-3")})
    assert_problem(r, 422, "invariant-failed")
    # the aggregate's own invariant over its value fields
    r = await store.patch(f"/api/products/{pid}", json={"price": money("1", "USD")})
    assert assert_problem(r, 422, "invariant-failed")["detail"] == "one currency per product"
    got = await ok(store, "GET", f"/api/products/{pid}", 200)
    assert (got["price"], got["version"]) == (money("12.50"), 1)
    # a malformed value object is a malformed request
    r = await store.patch(f"/api/products/{pid}", json={"price": {"amount": "1", "cents": 3}})
    assert_problem(r, 422, "invalid-request")


async def test_operation_with_a_value_parameter_and_an_event(store: ServiceClient) -> None:
    seen: list[Any] = []

    async def record(event: Any) -> None:
        seen.append(event)

    store.service.events.subscribe(store.module("store.domain").Repriced, record)
    pid = (await new_product(store))["id"]
    await ok(store, "POST", f"/api/products/{pid}/reprice", 204, json={"to": money("9.99")})
    got = await ok(store, "GET", f"/api/products/{pid}", 200)
    assert (got["price"], got["previous"]) == (money("9.99"), money("12.50"))
    assert [(str(e.before.amount), str(e.after.amount)) for e in seen] == [("12.50", "9.99")]
    # `==` on value objects is structural: the same price again is refused by the precondition
    r = await store.post(f"/api/products/{pid}/reprice", json={"to": money("9.99")})
    assert assert_problem(r, 422, "precondition-failed")["detail"] == "that is the price already"


# --------------------------------------------------------------------------------------------------
# Payloads


ORDER = {
    "customer": "ada",
    "lines": [{"label": "lamp", "price": money("12.50"), "quantity": 2}],
    "shipTo": {"street": "1 Main St", "city": "Lyon"},
}


async def test_payload_as_the_whole_workflow_body(store: ServiceClient) -> None:
    oid = await ok(store, "POST", "/api/workflows/place_order", 200, json=ORDER)
    view = await ok(store, "GET", "/api/queries/order_summary", 200, params={"id": oid})
    assert view == {
        "customer": "ada",
        "total": money("0"),
        "lines": 0,
        "shipTo": {"street": "1 Main St", "city": "Lyon", "zip": None},
    }
    r = await store.post("/api/workflows/place_order", json={"lines": []})
    body = assert_problem(r, 422, "invalid-request")
    assert [e["path"] for e in body["errors"]] == ["body.customer"]
    # a value object nested in the payload is checked too
    bad = {**ORDER, "lines": [{"label": "x", "price": money("-5")}]}
    r = await store.post("/api/workflows/place_order", json=bad)
    assert_problem(r, 422, "invariant-failed")
    r = await store.post("/api/workflows/place_order", json={**ORDER, "customer": ""})
    assert assert_problem(r, 422, "precondition-failed")["detail"] == "who is ordering?"
    spec = await ok(store, "GET", "/openapi.json", 200)
    request = spec["paths"]["/api/workflows/place_order"]["post"]["requestBody"]
    ref = request["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/PlaceOrderInput"


async def test_payload_among_other_parameters_is_nested(store: ServiceClient) -> None:
    body = {"c": ORDER, "total": money("200"), "percent": 10}
    oid = await ok(store, "POST", "/api/workflows/quick_order", 200, json=body)
    view = await ok(store, "GET", "/api/queries/order_summary", 200, params={"id": oid})
    assert view["total"] == money("180")
    r = await store.post("/api/workflows/quick_order", json={**ORDER, "total": money("1")})
    assert_problem(r, 422, "invalid-request")


async def test_query_payload_and_response_payload(store: ServiceClient) -> None:
    bob = {"c": {**ORDER, "customer": "bob"}, "total": money("50", "USD"), "percent": 0}
    await ok(store, "POST", "/api/workflows/quick_order", 200, json=bob)
    # the query payload's fields are the query parameters; the answer is the response payload
    view = await ok(store, "GET", "/api/queries/latest_order", 200, params={"customer": "bob"})
    assert view["total"] == money("50", "USD") and view["lines"] == 1
    r = await store.get("/api/queries/latest_order", params={"customer": "bob", "minTotal": "51"})
    assert_problem(r, 422, "precondition-failed")
    r = await store.get("/api/queries/latest_order", params={"customer": "nobody"})
    assert_problem(r, 404, "not-found")
    r = await store.get("/api/queries/latest_order")
    assert_problem(r, 422, "invalid-request")

    pid = (await new_product(store, "0"))["id"]
    got = await ok(store, "GET", "/api/queries/problems", 200, params={"product": pid})
    assert got == [{"reason": "it is free"}]
    pid = (await new_product(store, "10.00"))["id"]
    got = await ok(store, "GET", "/api/queries/taxed", 200, params={"product": pid, "rate": "0.2"})
    assert got == money("12.000")
    assert await ok(store, "GET", "/api/queries/problems", 200, params={"product": pid}) == []
    # a criterion over the fields of a value-typed parameter
    found = await ok(store, "GET", "/api/queries/matching", 200, params={"label": "lamp"})
    assert len(found) == 2
    assert await ok(store, "GET", "/api/queries/matching", 200, params={"label": "x"}) == []


async def test_command_payload_and_value_answer(store: ServiceClient) -> None:
    pid = (await new_product(store))["id"]
    got = await ok(
        store, "POST", "/api/commands/reprice", 200, json={"product": pid, "to": money("8")}
    )
    assert got == money("8")
    assert (await ok(store, "GET", f"/api/products/{pid}", 200))["previous"] == money("12.50")
    r = await store.post("/api/commands/reprice", json={"product": pid})
    assert_problem(r, 422, "invalid-request")
    r = await store.post("/api/commands/reprice", json={"product": pid, "to": money("-8")})
    assert_problem(r, 422, "invariant-failed")


async def test_value_objects_in_workflow_state(store: ServiceClient) -> None:
    oid = await ok(store, "POST", "/api/workflows/place_order", 200, json=ORDER)
    charge = {"order": oid, "charge": money("3.30")}
    await ok(store, "POST", "/api/workflows/billing", 204, json=charge)
    got = await ok(store, "GET", f"/api/workflows/billing/instances/{oid}", 200)
    assert got == {"order": oid, "version": 1, "charged": money("3.30"), "last": money("3.30")}
    r = await store.post("/api/workflows/billing", json={"order": oid, "charge": money("1", "USD")})
    assert_problem(r, 422, "precondition-failed")
