"""A committed write is never answered as a plain failure, and `Idempotency-Key` applies a mutating
request at most once (tests/e2e/models/durable_autocommit.loom), on SQLite and PostgreSQL.

The `lose_commit` fault lets the database apply a COMMIT and then breaks the connection before
the answer is read: the client gets `503 outcome-unknown`. A retry with the same key then gets
the answer recorded in that very commit, and nothing is applied twice — for every kind of
mutating route: an operation, a workflow, a command handler, crudish POST / PATCH / DELETE.
How the records are stored (concurrent duplicates, expiry, pruning) is the storage conformance
suite's (tests/runtime/storage/test_idempotency.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy import column, func, select, table

from loom.runtime import ConcurrencyConflict
from loom.testing import ServiceClient, serve

MODEL = [Path(__file__).resolve().parent / "models" / "durable_autocommit.loom"]
UNKNOWN = "urn:loom:problem:outcome-unknown"
REUSED = "urn:loom:problem:idempotency-key-reused"
OUTBOX = table("__loom_outbox", column("event_type"))


@pytest.fixture
async def stock(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


def keyed(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


async def new_item(c: ServiceClient, name: str = "box") -> str:
    r = await c.post("/api/items", json={"name": name})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def item(c: ServiceClient, id: str) -> dict[str, Any]:
    r = await c.get(f"/api/items/{id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def count(c: ServiceClient, t: Any) -> int:
    async with c.service.engine.connect() as conn:
        return int((await conn.execute(select(func.count()).select_from(t))).scalar_one())


def assert_unknown(r: httpx.Response) -> None:
    assert r.status_code == 503, r.text
    assert r.json()["type"] == UNKNOWN
    assert r.headers["retry-after"] == "1"


def assert_replayed(r: httpx.Response, first: httpx.Response | None, status: int) -> None:
    assert r.status_code == status, r.text
    assert r.headers["idempotent-replayed"] == "true"
    if first is not None:
        assert r.content == first.content


# -- a commit whose answer is lost -------------------------------------------------------------


async def test_a_commit_lost_without_a_key_is_503_outcome_unknown_and_the_write_is_there(
    stock: ServiceClient,
) -> None:
    id = await new_item(stock)
    stock.service.faults.lose_commit()
    assert_unknown(await stock.post(f"/api/items/{id}/bump"))  # transactional
    assert (await item(stock, id))["count"] == 1
    stock.service.faults.lose_commit()
    assert_unknown(await stock.post("/api/workflows/bump", json={"item": id}))  # autocommit
    assert (await item(stock, id))["count"] == 2
    # the service carries on on fresh connections
    assert (await stock.post(f"/api/items/{id}/bump")).status_code == 204
    assert (await item(stock, id))["count"] == 3


@pytest.mark.parametrize("route", ["operation", "workflow", "command", "transactional-command"])
async def test_a_retry_after_a_lost_commit_answers_the_recorded_answer_and_applies_once(
    stock: ServiceClient, route: str
) -> None:
    id, other = await new_item(stock), await new_item(stock)
    path, body, status = {
        "operation": (f"/api/items/{id}/bump", None, 204),
        "workflow": ("/api/workflows/bump", {"item": id}, 204),
        "command": ("/api/commands/bump", {"item": id}, 200),
        "transactional-command": (
            "/api/commands/bump_both",
            {"first": id, "second": other},
            200,
        ),
    }[route]
    events = await count(stock, OUTBOX)
    stock.service.faults.lose_commit()
    assert_unknown(await stock.post(path, json=body, headers=keyed("k-1")))
    assert (await item(stock, id))["count"] == 1  # applied
    retry = await stock.post(path, json=body, headers=keyed("k-1"))
    assert_replayed(retry, None, status)
    if status == 200:
        assert retry.json() == (1 if route == "command" else 2)
    again = await stock.post(path, json=body, headers=keyed("k-1"))
    assert_replayed(again, retry, status)
    assert (await item(stock, id))["count"] == 1  # once, however often it is retried
    bumped = 2 if route == "transactional-command" else 1
    assert await count(stock, OUTBOX) == events + bumped  # the durable event once too
    # the same key for another request is refused, and changes nothing
    other_body = {"item": other} if body and "item" in body else {"first": other, "second": id}
    r = await stock.post(path, json=other_body if body else {}, headers=keyed("k-1"))
    if body is None:  # the operation takes no body: another route instead
        r = await stock.post(f"/api/items/{other}/bump", headers=keyed("k-1"))
    assert r.status_code == 422, r.text
    assert r.json()["type"] == REUSED
    assert (await item(stock, other))["count"] == (1 if route == "transactional-command" else 0)
    # a new key is a new request
    r = await stock.post(path, json=body, headers=keyed("k-2"))
    assert r.status_code == status and "idempotent-replayed" not in r.headers, r.text
    assert (await item(stock, id))["count"] == 2


async def test_crudish_post_patch_delete_after_a_lost_commit_replay_their_answers(
    stock: ServiceClient,
) -> None:
    stock.service.faults.lose_commit()
    assert_unknown(await stock.post("/api/items", json={"name": "a"}, headers=keyed("create")))
    created = await stock.post("/api/items", json={"name": "a"}, headers=keyed("create"))
    assert_replayed(created, None, 201)
    id = created.json()["id"]
    assert created.headers["location"] == f"/api/items/{id}"
    assert created.headers["content-type"] == "application/json"
    assert (await stock.get("/api/items")).json()["total"] == 1  # one item, not two

    stock.service.faults.lose_commit()
    patch = {"name": "b"}
    assert_unknown(await stock.patch(f"/api/items/{id}", json=patch, headers=keyed("patch")))
    patched = await stock.patch(f"/api/items/{id}", json=patch, headers=keyed("patch"))
    assert_replayed(patched, None, 200)
    assert patched.json()["name"] == "b"
    assert patched.json()["version"] == 2  # applied once
    r = await stock.patch(f"/api/items/{id}", json={"name": "c"}, headers=keyed("patch"))
    assert r.status_code == 422 and r.json()["type"] == REUSED

    stock.service.faults.lose_commit()
    assert_unknown(await stock.delete(f"/api/items/{id}", headers=keyed("delete")))
    deleted = await stock.delete(f"/api/items/{id}", headers=keyed("delete"))
    assert_replayed(deleted, None, 204)  # the recorded 204, not a 404
    assert (await stock.get(f"/api/items/{id}")).status_code == 404


# -- what is recorded, and for whom ------------------------------------------------------------


async def test_a_keyed_request_sent_twice_is_applied_once_and_reactions_run_once(
    stock: ServiceClient,
) -> None:
    id = await new_item(stock)
    first = await stock.post("/api/workflows/look", json={"item": id}, headers=keyed("look"))
    assert first.status_code == 204 and "idempotent-replayed" not in first.headers
    second = await stock.post("/api/workflows/look", json={"item": id}, headers=keyed("look"))
    assert_replayed(second, first, 204)
    assert (await item(stock, id))["seen"] == 1
    looks = await stock.get(f"/api/projections/looks/{id}")
    assert looks.status_code == 200 and looks.json()["count"] == 1  # the reaction ran once


async def test_refusals_are_recorded_but_lost_races_and_server_errors_are_not(
    stock: ServiceClient,
) -> None:
    id, empty = await new_item(stock), await new_item(stock)
    body = {"item": id, "other": empty, "n": 1}
    refused = await stock.post("/api/workflows/restock", json=body, headers=keyed("take"))
    assert refused.status_code == 422 and refused.json()["type"].endswith("precondition-failed")
    await stock.post(f"/api/items/{empty}/bump")  # now there would be enough
    again = await stock.post("/api/workflows/restock", json=body, headers=keyed("take"))
    assert_replayed(again, refused, 422)  # the recorded answer, not a fresh run
    assert (await item(stock, id))["count"] == 0

    stock.service.faults.fail_save(1, ConcurrencyConflict("Item", id))
    r = await stock.post(f"/api/items/{id}/bump", headers=keyed("race"))
    assert r.status_code == 409, r.text
    r = await stock.post(f"/api/items/{id}/bump", headers=keyed("race"))
    assert r.status_code == 204 and "idempotent-replayed" not in r.headers  # retried fresh

    stock.service.faults.fail_save(1)
    r = await stock.post(f"/api/items/{id}/bump", headers=keyed("boom"))
    assert r.status_code == 500, r.text
    r = await stock.post(f"/api/items/{id}/bump", headers=keyed("boom"))
    assert r.status_code == 204 and "idempotent-replayed" not in r.headers
    assert (await item(stock, id))["count"] == 2


async def test_an_autocommit_workflow_refused_after_a_save_keeps_that_save_once(
    stock: ServiceClient,
) -> None:
    id, other = await new_item(stock), await new_item(stock)
    assert (await stock.post(f"/api/items/{other}/bump")).status_code == 204
    # the second save cannot be stored (count overflows 64 bits): 422 after the first committed
    body = {"item": id, "other": other, "n": -(2**63 - 1)}
    r = await stock.post("/api/workflows/restock", json=body)
    assert r.status_code == 422, r.text
    assert (await item(stock, id))["count"] == 1  # autocommit: the first save stays
    first = await stock.post("/api/workflows/restock", json=body, headers=keyed("overflow"))
    assert first.status_code == 422, first.text
    assert (await item(stock, id))["count"] == 2  # under a key too, with the answer
    again = await stock.post("/api/workflows/restock", json=body, headers=keyed("overflow"))
    assert_replayed(again, first, 422)
    assert (await item(stock, id))["count"] == 2
    assert (await item(stock, other))["count"] == 1


async def test_keys_are_validated_and_reads_ignore_them(stock: ServiceClient) -> None:
    id = await new_item(stock)
    for bad in ("", "x" * 256, "tab\there"):
        r = await stock.post(f"/api/items/{id}/bump", headers=keyed(bad))
        assert r.status_code == 422, (bad, r.text)
        assert r.json()["errors"][0]["path"] == "header.Idempotency-Key"
    assert (await item(stock, id))["count"] == 0
    assert (await stock.post(f"/api/items/{id}/bump", headers=keyed("x" * 255))).status_code == 204
    r = await stock.get(f"/api/items/{id}", headers=keyed("read"))
    assert r.status_code == 200 and "idempotent-replayed" not in r.headers
    r = await stock.get(f"/api/items/{id}", headers=keyed("read"))
    assert r.status_code == 200 and "idempotent-replayed" not in r.headers
    # an invalid body never reached a unit of work: nothing is recorded for it
    r = await stock.post("/api/workflows/bump", json={"item": "nope"}, headers=keyed("body"))
    assert r.status_code == 422
    r = await stock.post("/api/workflows/bump", json={"item": id}, headers=keyed("body"))
    assert r.status_code == 204 and "idempotent-replayed" not in r.headers


async def test_keys_are_scoped_by_principal(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "a-test-secret-that-is-long-enough-for-hs256"
    for name in ("LOOM_JWT_PUBLIC_KEY", "LOOM_JWT_AUDIENCE", "LOOM_JWT_ISSUER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", secret)

    def as_user(sub: str) -> dict[str, str]:
        claims = {"sub": sub, "exp": int(time.time()) + 600}
        return {"Authorization": "Bearer " + jwt.encode(claims, secret, algorithm="HS256")}

    async with serve(MODEL, database_url) as c:
        id = await new_item(c)
        path = f"/api/items/{id}/bump"
        for who in (as_user("ann"), as_user("bob"), {}):  # {}: anonymous
            r = await c.post(path, headers={**who, **keyed("shared")})
            assert r.status_code == 204 and "idempotent-replayed" not in r.headers, r.text
        assert (await item(c, id))["count"] == 3  # three principals, three requests
        for who in (as_user("ann"), as_user("bob"), {}):
            assert_replayed(await c.post(path, headers={**who, **keyed("shared")}), None, 204)
        assert (await item(c, id))["count"] == 3


async def test_the_openapi_document_lists_the_key_and_the_new_problems(
    stock: ServiceClient,
) -> None:
    doc = (await stock.get("/openapi.json")).json()
    bump = doc["paths"]["/api/items/{id}/bump"]["post"]
    header = [p for p in bump["parameters"] if p["name"] == "Idempotency-Key"]
    assert header and header[0]["in"] == "header" and not header[0]["required"]
    assert {"413", "422", "503"} <= set(bump["responses"])
    assert "outcome-unknown" in bump["responses"]["503"]["description"]
    read = doc["paths"]["/api/items/{id}"]["get"]
    assert all(p["name"] != "Idempotency-Key" for p in read.get("parameters", []))


async def test_a_keyed_request_with_two_units_of_work_runs_them_in_one_transaction(
    database_url: str,
) -> None:
    # the shop has channels and processes: a redrive tries the dead events, then the dead
    # timeouts, each in a unit of work of its own; under a key the second joins the first
    # (on SQLite it used to wait for the first's write lock forever)
    shop = Path(__file__).resolve().parents[2] / "examples" / "shop" / "shop.loom"
    async with serve([shop], database_url) as c:
        path = "/api/admin/dead-letters/01a23112-0416-7030-9029-07c59bda73a3/redrive"
        async with asyncio.timeout(20):
            first = await c.post(path, headers=keyed("redrive"))
            assert first.status_code == 404, first.text
            again = await c.post(path, headers=keyed("redrive"))
        assert_replayed(again, first, 404)
