"""Money with a declared precision and scale, over HTTP on SQLite and PostgreSQL
(tests/e2e/models/billing_money.loom): `decimal(10, 2)` is refused on input unless it fits (never
rounded) and answered padded to two places; `round(x, S, mode)` rounds; an operation storing an
unrounded value of unknown scale into a `decimal(10, 2)` is a 422 and saves nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_banking import assert_problem
from .test_wire_values import ok

MODEL = [ROOT / "tests/e2e/models/billing_money.loom"]


@pytest.fixture
async def billing(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def subscription(c: ServiceClient, price: Any = "14.00", **fields: Any) -> str:
    made = await ok(c, "POST", "/api/subscriptions", 201, json={"price": price, **fields})
    sid: str = made["id"]
    return sid


async def read(c: ServiceClient, sid: str) -> dict[str, Any]:
    got: dict[str, Any] = await ok(c, "GET", f"/api/subscriptions/{sid}")
    return got


async def test_a_prorated_amount_is_rounded_to_its_scale(billing: ServiceClient) -> None:
    sid = await subscription(billing)
    await ok(billing, "POST", f"/api/subscriptions/{sid}/prorate", 204, json={"days": 10})
    assert (await read(billing, sid))["prorated"] == "4.67"  # 14 * 10 / 30 = 4.666…


@pytest.mark.parametrize(
    ("mode", "price", "days", "expected"),
    [
        ("halfEven", "0.75", 1, "0.02"),  # 0.025: the tie goes to the even digit
        ("halfUp", "0.75", 1, "0.03"),  # the tie goes away from zero
        ("down", "14.00", 10, "4.66"),  # toward zero
        ("up", "13.80", 10, "4.60"),  # exact: nothing to round
        ("up", "14.00", 10, "4.67"),  # away from zero
        ("down", "-14.00", 10, "-4.66"),
        ("up", "-14.00", 10, "-4.67"),
        ("halfUp", "-0.75", 1, "-0.03"),
    ],
)
async def test_rounding_modes(
    billing: ServiceClient, mode: str, price: str, days: int, expected: str
) -> None:
    sid = await subscription(billing, price)
    op = {"halfEven": "prorate", "halfUp": "prorate_half_up", "down": "prorate_down"}.get(
        mode, "prorate_up"
    )
    await ok(billing, "POST", f"/api/subscriptions/{sid}/{op}", 204, json={"days": days})
    assert (await read(billing, sid))["prorated"] == expected


async def test_input_is_padded_to_the_scale_and_never_rounded(billing: ServiceClient) -> None:
    sid = await subscription(billing, "12.5")
    assert (await read(billing, sid))["price"] == "12.50"
    assert (await read(billing, await subscription(billing, 7)))["price"] == "7.00"
    for bad in ("12.345", 12.345, "0.001"):
        r = await billing.post("/api/subscriptions", json={"price": bad})
        problem = assert_problem(r, 422, "invalid-request")
        assert "price" in r.text and "at most 2 digits after the point" in r.text, problem
    listed = await ok(billing, "GET", "/api/subscriptions")
    assert len(listed["items"]) == 2  # the refused ones saved nothing


async def test_too_many_integer_digits_are_refused(billing: ServiceClient) -> None:
    sid = await subscription(billing, "99999999.99")  # the largest decimal(10, 2)
    assert (await read(billing, sid))["price"] == "99999999.99"
    r = await billing.post("/api/subscriptions", json={"price": "100000000"})
    assert_problem(r, 422, "invalid-request")
    assert "at most 8 digits before the point" in r.text
    r = await billing.post(f"/api/subscriptions/{sid}/charge", json={"amount": "123456789.5"})
    assert_problem(r, 422, "invalid-request")
    assert "amount" in r.text


async def test_an_unrounded_result_of_unknown_scale_is_refused(billing: ServiceClient) -> None:
    sid = await subscription(billing)
    before = await read(billing, sid)
    r = await billing.post(f"/api/subscriptions/{sid}/prorate_unrounded", json={"days": 10})
    problem = assert_problem(r, 422, "invariant-failed")
    assert problem["rule"] == "Subscription: prorated: decimal(10, 2)"
    assert await read(billing, sid) == before  # nothing saved, nothing rounded
    # an exact result of unknown scale that fits is stored
    await ok(billing, "POST", f"/api/subscriptions/{sid}/prorate_unrounded", 204, json={"days": 15})
    assert (await read(billing, sid))["prorated"] == "7.00"


async def test_a_product_beyond_the_precision_is_refused(billing: ServiceClient) -> None:
    sid = await subscription(billing, "99999999.00", rate="10")
    before = await read(billing, sid)
    r = await billing.post(f"/api/subscriptions/{sid}/apply_rate")
    assert assert_problem(r, 422, "invariant-failed")["rule"] == (
        "Subscription: price: decimal(10, 2)"
    )
    assert await read(billing, sid) == before


async def test_a_value_object_field_is_bounded_too(billing: ServiceClient) -> None:
    sid = await subscription(billing)
    await ok(billing, "POST", f"/api/subscriptions/{sid}/charge", 204, json={"amount": "3.1"})
    assert (await read(billing, sid))["last"]["amount"] == "3.10"
    r = await billing.post(f"/api/subscriptions/{sid}/charge", json={"amount": "3.141"})
    assert_problem(r, 422, "invalid-request")
    r = await billing.post(f"/api/subscriptions/{sid}/charge_computed", json={"days": 10})
    assert assert_problem(r, 422, "invariant-failed")["rule"] == "Charge: amount: decimal(10, 2)"
    assert (await read(billing, sid))["last"]["amount"] == "3.10"


async def test_a_list_of_bounded_decimals(billing: ServiceClient) -> None:
    sid = await subscription(billing, credits=["1.5", 2])
    assert (await read(billing, sid))["credits"] == ["1.50", "2.00"]
    r = await billing.post("/api/subscriptions", json={"price": 1, "credits": ["1.555"]})
    assert_problem(r, 422, "invalid-request")


async def test_openapi_shows_the_bound(billing: ServiceClient) -> None:
    doc = (await billing.get("/openapi.json")).json()
    schemas = doc["components"]["schemas"]
    out = next(v for k, v in schemas.items() if k.startswith("Subscription") and "Out" in k)
    price = out["properties"]["price"]
    assert price["type"] == "string"
    assert price["x-loom-decimal"] == {"precision": 10, "scale": 2}
    assert price["pattern"] == r"^-?[0-9]{1,8}(\.[0-9]{1,2})?$"
    created = next(v for k, v in schemas.items() if k.startswith("Subscription") and "Create" in k)
    assert created["properties"]["price"]["x-loom-decimal"] == {"precision": 10, "scale": 2}


async def test_an_event_field_is_bounded_too(billing: ServiceClient) -> None:
    sid = await subscription(billing)
    await ok(billing, "POST", f"/api/subscriptions/{sid}/announce", 204, json={"amount": "1.5"})
    before = await read(billing, sid)
    r = await billing.post(f"/api/subscriptions/{sid}/announce", json={"amount": "1.555"})
    assert assert_problem(r, 422, "invariant-failed")["rule"] == "Prorated: amount: decimal(10, 2)"
    assert await read(billing, sid) == before
