"""Strict wire input and UTC answers, over HTTP on SQLite and PostgreSQL
(tests/e2e/models/wire_strict.loom): a `datetime` is an ISO 8601 string with an offset and a `date`
is `YYYY-MM-DD`, nothing looser (no numbers, no epoch seconds, no datetime for a date); every answer
carries datetimes in UTC, the POST and PATCH answers the same as the GET after them; an operation
with no parameters refuses a body it would ignore; a 409 names the key that clashed; a PATCH of an
immutable field says so; a number too long for Python to convert is refused as out of range."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import column, select, table

from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_banking import assert_problem

MODEL = [ROOT / "tests/e2e/models/wire_strict.loom"]
JSON = {"content-type": "application/json"}
OUTBOX = table("__loom_outbox", column("event_type"), column("payload"))
AT = "2026-01-01T10:00:00.500000+02:00"
AT_UTC = "2026-01-01T08:00:00.500000Z"


@pytest.fixture
async def wire(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


def thing(**fields: Any) -> dict[str, Any]:
    return {"kind": "A", "opt": "x", "when": "2026-01-01", "at": AT, **fields}


async def new_thing(c: ServiceClient, **fields: Any) -> dict[str, Any]:
    r = await c.post("/api/things", json=thing(**fields))
    assert r.status_code == 201, r.text
    made: dict[str, Any] = r.json()
    return made


def refused(r: Any, path: str, *says: str) -> None:
    """A 422 invalid-request whose one error is at `path` and says each of `says`."""
    problem = assert_problem(r, 422, "invalid-request")
    assert [e["path"] for e in problem["errors"]] == [path], problem
    message = problem["errors"][0]["message"]
    for part in says:
        assert part in message, message
    assert path in problem["detail"] and "sys." not in problem["detail"]


async def count(c: ServiceClient) -> int:
    total: int = (await c.get("/api/things")).json()["total"]
    return total


# --------------------------------------------------------------------------------------------------
# Datetimes and dates in: exactly the ISO 8601 forms the docs name


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (1700000000, "ISO 8601 string with an offset, e.g. '2026-11-29T10:00:00Z'"),
        (1700000000.5, "ISO 8601 string with an offset"),
        ("1700000000", "is a number, not a datetime"),
        (True, "ISO 8601 string with an offset"),
        ("2026-01-01", "is a date, with no time of day"),
        ("2026-01-01T10:00:00", "has no offset"),
        ("2026-01-01T10:00:00.1234567Z", "more than 6 digits"),
        ("2026-01-01 10:00:00Z", "is not a datetime"),
        ("20260101T100000Z", "is not a datetime"),
        ("2026-02-30T10:00:00Z", "not a real instant"),
        ("0001-01-01T00:00:00+01:00", "outside the calendar"),
    ],
)
async def test_a_datetime_is_an_iso_string_with_an_offset(
    wire: ServiceClient, value: Any, says: str
) -> None:
    r = await wire.post("/api/things", json=thing(at=value))
    refused(r, "body.at", says)
    assert await count(wire) == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (86400, "a date is an ISO 8601 string YYYY-MM-DD"),
        ("86400", "is not a date"),
        ("1970-01-03T00:00:00+05:00", "is a datetime, not a date"),
        ("2026-01-01T00:00:00Z", "is a datetime, not a date"),
        ("2026-02-30", "not a real day"),
        ("20260101", "is not a date"),
    ],
)
async def test_a_date_is_yyyy_mm_dd_only(wire: ServiceClient, value: Any, says: str) -> None:
    r = await wire.post("/api/things", json=thing(when=value))
    refused(r, "body.when", says)
    assert await count(wire) == 0


async def test_operations_workflows_and_queries_take_the_same_forms(wire: ServiceClient) -> None:
    tid = (await new_thing(wire))["id"]
    r = await wire.post(f"/api/things/{tid}/stamp", json={"t": 1700000000, "d": "2026-01-02"})
    refused(r, "body.t", "ISO 8601 string with an offset")
    r = await wire.post(f"/api/things/{tid}/stamp", json={"t": AT, "d": 86400})
    refused(r, "body.d", "YYYY-MM-DD")
    r = await wire.post("/api/workflows/echo", json={"t": "1700000000", "d": "2026-02-01"})
    refused(r, "body.t", "is a number, not a datetime")
    r = await wire.get("/api/queries/later", params={"after": "1700000000"})
    refused(r, "query.after", "is a number, not a datetime")
    r = await wire.patch(f"/api/things/{tid}", json={"when": "1970-01-03T00:00:00+05:00"})
    refused(r, "body.when", "is a datetime, not a date")
    assert (await wire.get(f"/api/things/{tid}")).json()["when"] == "2026-01-01"


# --------------------------------------------------------------------------------------------------
# Datetimes out: UTC in every answer


async def test_post_and_patch_answer_utc_like_the_get_after_them(wire: ServiceClient) -> None:
    made = await new_thing(wire)
    assert made["at"] == AT_UTC
    got = (await wire.get(f"/api/things/{made['id']}")).json()
    assert got == made
    r = await wire.patch(f"/api/things/{made['id']}", json={"at": "2026-06-30T23:30:00-05:00"})
    assert r.status_code == 200, r.text
    patched = r.json()
    assert patched["at"] == "2026-07-01T04:30:00Z"
    assert (await wire.get(f"/api/things/{made['id']}")).json() == patched


async def test_workflow_answers_queries_and_events_are_utc(wire: ServiceClient) -> None:
    r = await wire.post("/api/workflows/echo", json={"t": AT, "d": "2026-03-01"})
    assert r.status_code == 200, r.text
    assert r.json() == AT_UTC
    tid = (await new_thing(wire))["id"]
    r = await wire.post(
        f"/api/things/{tid}/stamp", json={"t": "2026-05-01T00:30:00+01:00", "d": "2026-05-01"}
    )
    assert r.status_code == 204, r.text
    later = await wire.get("/api/queries/later", params={"after": "2026-04-30T23:00:00+00:00"})
    assert later.status_code == 200, later.text
    assert [t["at"] for t in later.json()] == ["2026-04-30T23:30:00Z"]
    async with wire.service.engine.connect() as conn:
        rows = (await conn.execute(select(OUTBOX.c.payload))).scalars().all()
    assert [json.loads(p)["at"] for p in rows] == ["2026-04-30T23:30:00Z"]
    assert [json.loads(p)["on"] for p in rows] == ["2026-05-01"]


# --------------------------------------------------------------------------------------------------
# Bodies of operations with no parameters


@pytest.mark.parametrize("path", ["/api/things/{id}/ping", "/api/workflows/tick"])
async def test_no_parameters_take_no_body_or_an_empty_object(
    wire: ServiceClient, path: str
) -> None:
    tid = (await new_thing(wire))["id"]
    url = path.format(id=tid)
    ok: dict[str, object] | None
    for ok in ({}, None):
        r = await wire.post(url, json=ok)
        assert r.status_code in (200, 204), r.text
    assert (await wire.post(url)).status_code in (200, 204)
    refused(await wire.post(url, json={"x": 1}), "body.x", "Extra inputs are not permitted")
    refused(await wire.post(url, content=b"garbage", headers=JSON), "body", "Invalid JSON")
    refused(await wire.post(url, content=b"garbage"), "body", "Invalid JSON")
    refused(await wire.post(url, json=[1]), "body", "valid dictionary or object")
    if "ping" in url:  # the refused ones ran nothing
        assert (await wire.get(f"/api/things/{tid}")).json()["count"] == 3


async def test_a_crudish_delete_takes_no_body(wire: ServiceClient) -> None:
    tid = (await new_thing(wire))["id"]
    r = await wire.request("DELETE", f"/api/things/{tid}", json={"version": 1})
    refused(r, "body.version", "Extra inputs are not permitted")
    assert (await wire.get(f"/api/things/{tid}")).status_code == 200
    assert (await wire.delete(f"/api/things/{tid}")).status_code == 204


async def test_an_operation_with_parameters_refuses_the_same_way(wire: ServiceClient) -> None:
    tid = (await new_thing(wire))["id"]
    url = f"/api/things/{tid}/bump"
    refused(
        await wire.post(url, json={"by": 1, "x": 1}), "body.x", "Extra inputs are not permitted"
    )
    refused(await wire.post(url, content=b"garbage", headers=JSON), "body", "Invalid JSON")


# --------------------------------------------------------------------------------------------------
# Refusals that name what is wrong


async def test_a_409_names_the_key_that_clashed(wire: ServiceClient) -> None:
    await new_thing(wire)
    r = await wire.post("/api/things", json=thing(when="2026-02-01"))  # (kind, opt) taken
    problem = assert_problem(r, 409, "duplicate-key")
    assert problem["detail"] == "another Thing already has this kind and opt"
    assert problem["key"] == ["kind", "opt"] and problem["aggregate"] == "Thing"
    r = await wire.post("/api/things", json=thing(opt="y"))  # (when) taken
    problem = assert_problem(r, 409, "duplicate-key")
    assert problem["detail"] == "another Thing already has this when"
    assert problem["key"] == ["when"]
    other = await new_thing(wire, opt="z", when="2026-03-01")
    r = await wire.patch(f"/api/things/{other['id']}", json={"when": "2026-01-01"})
    assert assert_problem(r, 409, "duplicate-key")["key"] == ["when"]
    assert await count(wire) == 2


async def test_patch_of_an_immutable_field_says_so(wire: ServiceClient) -> None:
    made = await new_thing(wire)
    r = await wire.patch(f"/api/things/{made['id']}", json={"code": "z"})
    refused(r, "body.code", "code is immutable", "set at create only")
    r = await wire.patch(f"/api/things/{made['id']}", json={"code": "z", "count": "1", "nope": 1})
    problem = assert_problem(r, 422, "invalid-request")
    assert {e["path"]: e["message"] for e in problem["errors"]} == {
        "body.count": "Input should be a valid integer",
        "body.code": "code is immutable: it is set at create only, never updated",
        "body.nope": "Extra inputs are not permitted",
    }
    assert (await wire.get(f"/api/things/{made['id']}")).json() == made


@pytest.mark.parametrize("digits", ["9" * 5000, "-" + "9" * 5000])
async def test_a_number_too_long_to_convert_is_out_of_range(
    wire: ServiceClient, digits: str
) -> None:
    tid = (await new_thing(wire))["id"]
    body = f'{{"by": {digits}}}'.encode()
    r = await wire.post(f"/api/things/{tid}/bump", content=body, headers=JSON)
    refused(r, "body.by", "than or equal to")
    assert "digits" not in r.text and "int_max_str" not in r.text
    assert (await wire.get(f"/api/things/{tid}")).json()["count"] == 0
