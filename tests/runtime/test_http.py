"""problem+json answers, request validation, decimals on the wire, OpenAPI."""

from __future__ import annotations

import json
import logging
from typing import Any
from uuid import UUID

import httpx
import pytest

from loom.runtime import ConcurrencyConflict, Service, new_id

PROBLEM = "application/problem+json"


async def create(client: httpx.AsyncClient, name: str = "x", **extra: Any) -> UUID:
    r = await client.post("/api/items", json={"name": name, **extra})
    assert r.status_code == 200, r.text
    return UUID(r.json())


def problem(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == PROBLEM
    body = r.json()
    assert body["status"] == status
    assert {"type", "title", "status", "detail", "instance"} <= body.keys()
    return body


async def test_not_found_has_the_same_body_from_every_call_site(client: httpx.AsyncClient) -> None:
    missing = new_id()
    got = problem(await client.get(f"/api/items/{missing}"), 404)
    posted = problem(await client.post(f"/api/items/{missing}/increment", json={"by": 1}), 404)
    assert got["instance"] == f"/api/items/{missing}"
    assert posted["instance"] == f"/api/items/{missing}/increment"
    got.pop("instance"), posted.pop("instance")
    assert (
        got
        == posted
        == {
            "type": "urn:loom:problem:not-found",
            "title": "Not Found",
            "status": 404,
            "detail": f"Item {missing} does not exist",
            "aggregate": "Item",
        }
    )


async def test_refusals_name_their_rule(client: httpx.AsyncClient) -> None:
    item = await create(client)
    body = problem(await client.post(f"/api/items/{item}/increment", json={"by": 0}), 422)
    assert body["type"] == "urn:loom:problem:precondition-failed"
    assert body["title"] == "Precondition failed"
    assert body["rule"] == "Item.increment: precondition by > 0"
    assert body["detail"] == "by must be positive"
    assert (await client.post(f"/api/items/{item}/increment", json={"by": 1})).status_code == 204
    body = problem(await client.post(f"/api/items/{item}/close"), 422)
    assert body["type"] == "urn:loom:problem:state-gate-refused"
    assert body["rule"] == "Item.close: when count == 0"
    body = problem(await client.post(f"/api/items/{item}/increment", json={"by": 1_000_000}), 422)
    assert body["type"] == "urn:loom:problem:invariant-failed"
    assert body["rule"] == "Item: invariant count <= 1000000"


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({"by": "many"}, "body.by"),
        ({}, "body.by"),
        ({"by": 1, "extra": 2}, "body.extra"),
        ({"by": 2**63}, "body.by"),  # too large for BIGINT: a 422, never a database error
        ({"by": -(2**63) - 1}, "body.by"),
    ],
)
async def test_validation_errors_carry_paths(
    client: httpx.AsyncClient, payload: dict[str, Any], path: str
) -> None:
    item = await create(client)
    body = problem(await client.post(f"/api/items/{item}/increment", json=payload), 422)
    assert body["type"] == "urn:loom:problem:invalid-request"
    assert body["title"] == "Invalid request"
    assert [e["path"] for e in body["errors"]] == [path]
    assert all(e["message"] for e in body["errors"])


@pytest.mark.parametrize(
    "raw",
    [
        b'{"by": 1',
        b"not json",
        b'{"by": NaN}',
        b'{"by": Infinity}',
        b"\xff\xfe\x00",
        b"[" * 100_000,
    ],
)
async def test_malformed_json_is_a_422(client: httpx.AsyncClient, raw: bytes) -> None:
    item = await create(client)
    r = await client.post(
        f"/api/items/{item}/increment", content=raw, headers={"content-type": "application/json"}
    )
    body = problem(r, 422)
    assert body["type"] == "urn:loom:problem:invalid-request"
    assert body["errors"][0]["path"] == "body"


async def test_bad_path_and_query_params_are_422(client: httpx.AsyncClient) -> None:
    body = problem(await client.get("/api/items/not-a-uuid"), 422)
    assert [e["path"] for e in body["errors"]] == ["path.id"]
    body = problem(await client.post("/api/items/42/increment", json={"by": 1}), 422)
    assert "path.id" in [e["path"] for e in body["errors"]]
    body = problem(await client.get("/api/items", params={"limit": 0}), 422)
    assert [e["path"] for e in body["errors"]] == ["query.limit"]
    body = problem(await client.get("/api/items", params={"offset": 2**70}), 422)
    assert [e["path"] for e in body["errors"]] == ["query.offset"]


async def test_conflict_is_a_409(client: httpx.AsyncClient, service: Service) -> None:
    item = await create(client)
    service.faults.fail_save(1, ConcurrencyConflict("Item", item))
    body = problem(await client.post(f"/api/items/{item}/increment", json={"by": 1}), 409)
    assert body["type"] == "urn:loom:problem:concurrency-conflict"
    assert body["aggregate"] == "Item"


async def test_duplicate_create_is_a_409_through_the_real_path(
    client: httpx.AsyncClient, service: Service
) -> None:
    from .sample_service import Item, Items

    item = Item(name="taken")
    async with service.autocommit() as work:
        await Items(work).save(item)
    with pytest.raises(ConcurrencyConflict):
        async with service.autocommit() as work:
            await Items(work).save(Item(name="again", id=item.id))


async def test_internal_errors_do_not_leak(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="loom.http"):
        r = await client.get("/api/boom")
    body = problem(r, 500)
    assert body["type"] == "urn:loom:problem:internal"
    assert "hunter2" not in r.text and "RuntimeError" not in r.text
    (line,) = [json.loads(rec.getMessage()) for rec in caplog.records if rec.name == "loom.http"]
    assert line["event"] == "unhandled_exception" and "hunter2" in line["error"]


async def test_unknown_route_and_method_are_problems(client: httpx.AsyncClient) -> None:
    body = problem(await client.get("/nowhere"), 404)
    assert body["type"] == "urn:loom:problem:no-such-route"
    assert body["detail"] == "no route GET /nowhere"
    r = await client.delete("/api/items")
    body = problem(r, 405)
    assert body["type"] == "urn:loom:problem:method-not-allowed"
    assert body["title"] == "Method Not Allowed"
    assert body["detail"] == f"DELETE is not allowed on /api/items; allowed: {r.headers['allow']}"


async def test_decimals_cross_the_wire_exactly(client: httpx.AsyncClient) -> None:
    item = await create(client)
    raw = b'{"amount": 1234567890123.456789012345}'  # 25 significant digits, a JSON number
    r = await client.post(
        f"/api/items/{item}/amount", content=raw, headers={"content-type": "application/json"}
    )
    assert r.status_code == 204, r.text
    got = (await client.get(f"/api/items/{item}")).json()
    assert got["amount"] == "1234567890123.456789012345"  # output: a JSON string
    for text in ("0.1", "-98765432109876543210.123456789", "1E-30"):
        r = await client.post(f"/api/items/{item}/amount", json={"amount": text})
        assert r.status_code == 204, r.text
        assert (await client.get(f"/api/items/{item}")).json()["amount"] == text


async def test_create_with_decimal_number_body(client: httpx.AsyncClient) -> None:
    r = await client.post(
        "/api/items",
        content=b'{"name": "n", "amount": 0.30000000000000004}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 200, r.text
    got = (await client.get(f"/api/items/{r.json()}")).json()
    assert got["amount"] == "0.30000000000000004"


async def test_page_over_http(client: httpx.AsyncClient) -> None:
    ids = [str(await create(client, f"p{n}")) for n in range(3)]
    body = (await client.get("/api/items", params={"limit": 2, "offset": 1})).json()
    assert body["limit"] == 2 and body["offset"] == 1 and body["total"] == 3
    assert [i["id"] for i in body["items"]] == ids[1:]
    assert body["items"][0]["happenedAt"].endswith("Z")


async def test_openapi_and_docs(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    assert "Problem" in spec["components"]["schemas"]
    responses = spec["paths"]["/api/items/{id}"]["get"]["responses"]
    assert responses["404"]["content"][PROBLEM]["schema"]["$ref"] == "#/components/schemas/Problem"
    assert (await client.get("/docs")).status_code == 200


async def test_unstorable_values_are_client_errors_not_500s(
    client: httpx.AsyncClient, service: Service
) -> None:
    # PostgreSQL refuses NUL in text (SQLSTATE class 22): that is the client's data, so a 422
    # (generated services refuse NUL at the wire on every engine: tests/e2e/test_wire_values.py).
    r = await client.post("/api/items", json={"name": "nul\u0000byte"})
    assert r.status_code in (200, 422), r.text
    if r.status_code == 422:
        assert not service.is_sqlite
        assert r.json()["type"] == "urn:loom:problem:invalid-request"
    # a decimal outside the bounds of `decimal` is refused by storage on every engine alike
    for huge in ("1E+200000", "1E+2000000", "-1E-2000000", "1E+50", "1E-51"):
        r = await client.post("/api/items", json={"name": "big", "amount": huge})
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:invalid-request"
    r = await client.post("/api/items", json={"name": "big", "amount": "-9" * 1 + "9" * 49})
    assert r.status_code == 200, r.text
    got = (await client.get(f"/api/items/{r.json()}")).json()["amount"]
    assert got == "-" + "9" * 50


def test_pool_exhaustion_is_a_503_not_a_500() -> None:
    from sqlalchemy.exc import TimeoutError as PoolTimeout
    from starlette.requests import Request

    from loom.runtime.http.problems import problem_for

    request = Request(
        {
            "type": "http",
            "method": "GET",
            "path": "/x",
            "headers": [],
            "query_string": b"",
            "root_path": "",
        }
    )
    r = problem_for(request, PoolTimeout("QueuePool limit reached"))
    assert r.status_code == 503 and r.headers["retry-after"] == "1"
    assert json.loads(bytes(r.body))["type"] == "urn:loom:problem:unavailable"
