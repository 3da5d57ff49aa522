"""Lists built in a loop, over HTTP on SQLite and PostgreSQL (tests/e2e/models/lists.loom): a
queryHandler maps the aggregates a find answers to response payloads (`var out: T[] = []`,
`out := out + [T { … }]`), sums, counts and filters over one loop; a commandHandler counts what
it changed; a workflow counts in the branches of an `if`; an operation appends to a list field (`notes := notes + [Note { … }]`), stored and
read back; a derived value joins two lists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_wire_values import ok

MODEL = [ROOT / "tests/e2e/models/lists.loom"]


@pytest.fixture
async def sales(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def order(c: ServiceClient, customer: str, amount: str, **fields: Any) -> str:
    body = {"customer": customer, "amount": amount, **fields}
    made = await ok(c, "POST", "/api/orders", 201, json=body)
    oid: str = made["id"]
    return oid


async def test_a_query_maps_aggregates_to_payloads(sales: ServiceClient) -> None:
    a = await order(sales, "ann", "10.50")
    b = await order(sales, "ann", "120.00")
    await order(sales, "bob", "7.00")
    await ok(sales, "POST", f"/api/orders/{b}/annotate", 204, json={"text": "gift"})
    await ok(sales, "POST", f"/api/orders/{b}/annotate", 204, json={"text": "wrap"})

    lines = await ok(sales, "GET", "/api/queries/orders_of", params={"customer": "ann"})
    assert sorted(lines, key=lambda line: line["amount"]) == [
        {"order": a, "amount": "10.50", "notes": 0},
        {"order": b, "amount": "120.00", "notes": 2},
    ]
    # no aggregate: the empty list the body started with
    assert await ok(sales, "GET", "/api/queries/orders_of", params={"customer": "cy"}) == []


async def test_a_sum_a_count_and_a_filter_over_one_loop(sales: ServiceClient) -> None:
    await order(sales, "ann", "10.50")
    big = await order(sales, "ann", "120.00")
    await order(sales, "ann", "0.25")
    await order(sales, "bob", "999.00")

    params = {"customer": "ann", "large": "100"}
    total = await ok(sales, "GET", "/api/queries/total_of", params=params)
    assert total == {"customer": "ann", "orders": 3, "total": "130.75", "large": [big]}

    params = {"customer": "nobody", "large": "1"}
    none = await ok(sales, "GET", "/api/queries/total_of", params=params)
    assert none == {"customer": "nobody", "orders": 0, "total": "0.00", "large": []}


async def test_a_workflow_counts_in_branches(sales: ServiceClient) -> None:
    for amount in ("1.00", "150.00", "2.00", "300.00", "3.00"):
        await order(sales, "ann", amount)
    body = {"customer": "ann", "large": "100"}
    assert await ok(sales, "POST", "/api/workflows/sizes", json=body) == 203  # 2 big, 3 small
    body = {"customer": "nobody", "large": "100"}
    assert await ok(sales, "POST", "/api/workflows/sizes", json=body) == 0


async def test_an_operation_appends_to_a_list_field(sales: ServiceClient) -> None:
    a = await order(sales, "ann", "1.00", cc=["carl"])
    b = await order(sales, "ann", "2.00")
    await order(sales, "bob", "3.00")

    body = {"customer": "ann", "text": "late"}
    assert await ok(sales, "POST", "/api/commands/annotate_all", json=body) == 2
    body = {"customer": "ann", "text": "sorry"}
    assert await ok(sales, "POST", "/api/commands/annotate_all", json=body) == 2

    got = await ok(sales, "GET", f"/api/orders/{a}")
    assert got["notes"] == [{"text": "late"}, {"text": "sorry"}]  # in order, each kept
    assert got["recipients"] == ["ann", "carl"]  # `[customer] + cc`
    assert (await ok(sales, "GET", f"/api/orders/{b}"))["recipients"] == ["ann"]
    lines = await ok(sales, "GET", "/api/queries/orders_of", params={"customer": "ann"})
    assert sorted(line["notes"] for line in lines) == [2, 2]


async def test_a_bad_parameter_is_a_problem_not_a_crash(sales: ServiceClient) -> None:
    r = await sales.get("/api/queries/total_of", params={"customer": "ann", "large": "lots"})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
