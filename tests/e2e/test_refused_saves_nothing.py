"""A refused request saves nothing, and a row that is saved can always be read back, over HTTP on
SQLite and PostgreSQL (tests/e2e/models/refused_saves.loom).

A save computes the aggregate's derived values and checks every int it holds against 64 bits
before it writes: a crudish create or PATCH, or an operation, whose row could not be answered is
a 422 (`arithmetic-refused` / `time-refused`, naming the field or derived value) and leaves the
table as it was — with or without an `Idempotency-Key`. Int arithmetic is exact in between; a
result beyond 64 bits is refused where it leaves the domain (a save, an answer, an event)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import func, select

from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_banking import assert_problem
from .test_wire_values import ok

MODEL = [ROOT / "tests/e2e/models/refused_saves.loom"]
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


@pytest.fixture
async def shop(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def rows(c: ServiceClient) -> int:
    async with c.service.engine.connect() as conn:
        evs = c.module("shop.tables").evs
        found = await conn.execute(select(func.count()).select_from(evs))
        return int(found.scalar_one())


async def all_readable(c: ServiceClient) -> list[dict[str, Any]]:
    """Every stored Ev, read back by the list and one by one (a row that breaks a read fails)."""
    listed = await ok(c, "GET", "/api/evs")
    for item in listed["items"]:
        assert await ok(c, "GET", f"/api/evs/{item['id']}") == item
    assert listed["total"] == len(listed["items"]) == await rows(c)
    items: list[dict[str, Any]] = listed["items"]
    return items


async def new_ev(c: ServiceClient, **fields: Any) -> dict[str, Any]:
    made: dict[str, Any] = await ok(c, "POST", "/api/evs", 201, json=fields)
    return made


def refused(r: Any, kind: str, *said: str) -> dict[str, Any]:
    body = assert_problem(r, 422, kind)
    for text in said:
        assert text in body["detail"], body
    return body


CREATES = [
    # d * d has 61 digits before the point: a decimal holds 50
    ({"d": "1E+30"}, "arithmetic-refused", ("derived Ev.sq", "does not fit")),
    ({"d": "-1E+30"}, "arithmetic-refused", ("derived Ev.sq",)),
    # n * 2 is beyond 64 bits, either way
    ({"n": INT64_MIN}, "arithmetic-refused", ("derived Ev.twice", str(2 * INT64_MIN), "64 bits")),
    ({"n": 5_000_000_000_000_000_000}, "arithmetic-refused", ("derived Ev.twice",)),
    # opened + grace leaves the calendar; a date moves by whole days only
    ({"opened": "9999-12-31"}, "time-refused", ("derived Ev.until",)),
    ({"grace": "P1DT25H"}, "time-refused", ("derived Ev.until",)),
    ({"grace": "-P800000D"}, "time-refused", ("derived Ev.until",)),
]


@pytest.mark.parametrize(("fields", "kind", "said"), CREATES)
async def test_a_refused_create_saves_nothing(
    shop: ServiceClient, fields: dict[str, Any], kind: str, said: tuple[str, ...]
) -> None:
    kept = await new_ev(shop, n=3)
    refused(await shop.post("/api/evs", json=fields), kind, *said)
    assert await all_readable(shop) == [kept]


@pytest.mark.parametrize(("fields", "kind", "said"), CREATES)
async def test_a_refused_patch_leaves_the_row_as_it_was(
    shop: ServiceClient, fields: dict[str, Any], kind: str, said: tuple[str, ...]
) -> None:
    kept = await new_ev(shop, n=3)
    refused(await shop.patch(f"/api/evs/{kept['id']}", json=fields), kind, *said)
    assert await all_readable(shop) == [kept]


@pytest.mark.parametrize(("fields", "kind", "said"), CREATES[::2])
async def test_a_refused_keyed_create_records_the_refusal_and_saves_nothing(
    shop: ServiceClient, fields: dict[str, Any], kind: str, said: tuple[str, ...]
) -> None:
    headers = {"Idempotency-Key": f"create-{kind}-{len(said)}"}
    first = await shop.post("/api/evs", json=fields, headers=headers)
    refused(first, kind, *said)
    again = await shop.post("/api/evs", json=fields, headers=headers)
    assert (again.status_code, again.json()) == (422, first.json())
    assert await all_readable(shop) == []


async def test_a_refused_keyed_patch_leaves_the_row_as_it_was(shop: ServiceClient) -> None:
    kept = await new_ev(shop)
    headers = {"Idempotency-Key": "patch-1"}
    r = await shop.patch(f"/api/evs/{kept['id']}", json={"n": INT64_MAX}, headers=headers)
    refused(r, "arithmetic-refused", "derived Ev.twice")
    assert await all_readable(shop) == [kept]


async def test_an_operation_that_breaks_a_derived_value_is_refused(shop: ServiceClient) -> None:
    ev = await new_ev(shop, opened="9999-12-01")
    r = await shop.post(f"/api/evs/{ev['id']}/push", json={"by": "P30D"})
    refused(r, "time-refused", "derived Ev.until")
    keyed = {"Idempotency-Key": "push-1"}
    r = await shop.post(f"/api/evs/{ev['id']}/push", json={"by": "P30D"}, headers=keyed)
    refused(r, "time-refused", "derived Ev.until")
    await ok(shop, "POST", f"/api/evs/{ev['id']}/push", 204, json={"by": "P29D"})
    (read,) = await all_readable(shop)
    assert (read["until"], read["version"]) == ("9999-12-31", 2)


async def test_an_int_field_beyond_64_bits_blames_the_field(shop: ServiceClient) -> None:
    made = await ok(shop, "POST", "/api/counters", 201, json={"count": INT64_MAX - 1})
    path = f"/api/counters/{made['id']}"
    for key in (None, "add-1"):
        headers = {"Idempotency-Key": key} if key else {}
        r = await shop.post(f"{path}/add", json={"by": 2}, headers=headers)
        body = refused(r, "arithmetic-refused", "Counter.count would be 9223372036854775808")
        assert "body" not in body["detail"] and "errors" not in body
    assert await ok(shop, "GET", path) == made
    listed = await ok(shop, "GET", "/api/counters")
    assert listed["items"] == [made]


async def test_a_derived_money_value_must_fit_its_scale(shop: ServiceClient) -> None:
    made = await ok(shop, "POST", "/api/shares", 201, json={"total": "3"})
    assert made["third"] == "1.00"
    for key in (None, "share-1"):
        headers = {"Idempotency-Key": key} if key else {}
        r = await shop.post("/api/shares", json={"total": "1"}, headers=headers)
        refused(r, "arithmetic-refused", "derived Share.third would be 0.33", "decimal(10, 2)")
        headers = {"Idempotency-Key": f"{key}-patch"} if key else {}
        r = await shop.patch(f"/api/shares/{made['id']}", json={"total": "1"}, headers=headers)
        refused(r, "arithmetic-refused", "derived Share.third")
    listed = await ok(shop, "GET", "/api/shares")
    assert listed["items"] == [made]


async def test_a_workflow_result_beyond_64_bits_rolls_back(shop: ServiceClient) -> None:
    ev = await new_ev(shop, n=1)
    r = await shop.post("/api/workflows/count", json={"ev": ev["id"], "by": 2**61})
    refused(r, "arithmetic-refused", "the result of workflow count")
    assert await all_readable(shop) == [ev]  # its transaction, bump included, rolled back
    assert await ok(shop, "POST", "/api/workflows/count", json={"ev": ev["id"], "by": 1}) == 8


async def test_an_event_with_an_int_beyond_64_bits_is_refused(shop: ServiceClient) -> None:
    seen: list[Any] = []

    async def record(event: Any) -> None:
        seen.append(event)

    shop.service.events.subscribe(shop.module("shop.domain").Bumped, record)
    ev = await new_ev(shop, n=2**40)
    r = await shop.post(f"/api/evs/{ev['id']}/announce", json={"by": 2**40})
    refused(r, "arithmetic-refused", "event Shop.Bumped.total")
    await ok(shop, "POST", f"/api/evs/{ev['id']}/announce", 204, json={"by": 3})
    assert [e.total for e in seen] == [3 * 2**40]


@pytest.mark.parametrize(("a", "b"), [(INT64_MAX, 1), (INT64_MIN, -1), (INT64_MIN, INT64_MIN)])
async def test_a_query_result_beyond_64_bits_is_a_422(shop: ServiceClient, a: int, b: int) -> None:
    r = await shop.get("/api/queries/sum", params={"a": a, "b": b})
    refused(r, "arithmetic-refused", "the result of queryHandler Sum", str(a + b))
    assert await ok(shop, "GET", "/api/queries/sum", params={"a": INT64_MAX, "b": -1}) == (
        INT64_MAX - 1
    )


async def test_int_arithmetic_is_exact_in_between(shop: ServiceClient) -> None:
    # a * b is far beyond 64 bits; its remainder is not
    got = await ok(
        shop, "GET", "/api/queries/rem", params={"a": INT64_MAX, "b": INT64_MAX, "c": 10}
    )
    assert got == INT64_MAX * INT64_MAX % 10
