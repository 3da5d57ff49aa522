"""Bounded parameters of operations called from inside, over HTTP on SQLite and PostgreSQL
(tests/e2e/models/decimal_params.loom; docs/language.md#money-decimalp-s-and-round).

A `decimal(10, 2)` parameter is checked on the wire for a request's own arguments (422
`invalid-request`), and where the operation starts for what a workflow, a command handler, a
sibling operation or a reaction computed and passed: a value with more digits than declared, after
or before the point, is refused (422 `precondition-failed`, its rule naming the operation and the
parameter), never rounded, and nothing is saved; a reaction's refusal is a failed delivery, here
dead-lettered at once. The same holds for a declared factory's `decimal(8, 2)` parameter, an
extern operation's (checked before the user's Python runs) and a `string(5)` parameter. Every refused call is counted, with what it left behind (nothing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from loom.testing import ServiceClient, build_service
from tests.e2e.tokens import SECRET, token

from .conftest import ROOT
from .test_banking import assert_problem
from .test_wire_values import ok

MODEL = [ROOT / "tests/e2e/models/decimal_params.loom"]
OPERATOR = token(sub="ops", roles=["admin"])
DETAIL = "amount: it has at most 8 digits before the point and 2 after it"


@pytest.fixture
async def billing(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    for name in ("LOOM_JWT_PUBLIC_KEY", "LOOM_JWT_AUDIENCE", "LOOM_JWT_ISSUER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)  # the admin routes, for the dead letter
    # the extern implementation lives beside the model; the service imports it by module name
    monkeypatch.syspath_prepend(str(MODEL[0].parent))
    main = build_service(MODEL)
    app = main.build_app(database_url, extern_module="decimal_params_externs")
    async with app.router.lifespan_context(app), ServiceClient(app, main) as client:
        yield client


async def account(c: ServiceClient) -> str:
    made = await ok(c, "POST", "/api/accounts", 201, json={})
    return str(made["id"])


async def state(c: ServiceClient, aid: str) -> tuple[str, int, str]:
    got = await ok(c, "GET", f"/api/accounts/{aid}")
    return got["balance"], got["credits"], got["tag"]


def refused(r: Any, rule: str) -> dict[str, Any]:
    body = assert_problem(r, 422, "precondition-failed")
    assert body["rule"] == rule, body
    return body


async def test_a_computed_argument_with_more_scale_is_refused(billing: ServiceClient) -> None:
    c = billing
    aid = await account(c)
    calls = 0
    # a command workflow: 10 / 3 has fifty digits after the point
    r = await c.post("/api/workflows/split", json={"account": aid, "total": "10", "parts": 3})
    body = refused(r, "Account.credit: amount: decimal(10, 2)")
    assert body["detail"].startswith(DETAIL), body
    calls += 1
    # a command handler, an internal operation
    r = await c.post("/api/commands/share", json={"account": aid, "total": "1", "parts": 8})
    refused(r, "Account.creditInside: amount: decimal(10, 2)")  # 0.125
    calls += 1
    # a sibling operation, from the public route of another
    r = await c.post(f"/api/accounts/{aid}/credit_third", json={"total": "1.00"})
    refused(r, "Account.creditInside: amount: decimal(10, 2)")
    calls += 1
    # a declared factory's parameter
    r = await c.post("/api/workflows/invoice", json={"total": "1", "parts": 3})
    refused(r, "Invoice.create: amount: decimal(8, 2)")
    calls += 1
    # an extern operation's, before the user's code (which would subtract it) runs
    r = await c.post("/api/workflows/charge", json={"account": aid, "total": "1", "parts": 3})
    refused(r, "Account.fee: amount: decimal(10, 2)")
    calls += 1
    assert await state(c, aid) == ("0", 0, "")
    assert (await ok(c, "GET", "/api/invoices"))["items"] == []
    print(f"refused inside: {calls}, saved: 0")

    # what fits passes: 10 / 4 is 2.5, 9 / 3 is 3, 0.03 / 3 is 0.01
    await ok(c, "POST", "/api/workflows/split", json={"account": aid, "total": "10", "parts": 4})
    await ok(c, "POST", "/api/commands/share", 204, json={"account": aid, "total": "9", "parts": 3})
    await ok(c, "POST", f"/api/accounts/{aid}/credit_third", 204, json={"total": "0.03"})
    await ok(
        c, "POST", "/api/workflows/charge", 204, json={"account": aid, "total": "1", "parts": 4}
    )
    balance, credits, _ = await state(c, aid)
    assert (balance, credits) == ("5.26", 4)
    made = await ok(c, "POST", "/api/workflows/invoice", json={"total": "10", "parts": 4})
    # held with the parameter's two places, as the wire would have handed it
    assert (await ok(c, "GET", f"/api/invoices/{made}"))["total"] == "2.50"


async def test_a_computed_argument_with_more_digits_before_the_point_is_refused(
    billing: ServiceClient,
) -> None:
    c = billing
    aid = await account(c)
    body = {"account": aid, "base": "1000000", "factor": "100"}  # 100000000.00: nine digits
    r = await c.post("/api/workflows/scale", json=body)
    refused(r, "Account.credit: amount: decimal(10, 2)")
    assert await state(c, aid) == ("0", 0, "")
    body["factor"] = "99.99999999"  # 99999999.99000000: fits (trailing zeros are no digits)
    await ok(c, "POST", "/api/workflows/scale", 204, json=body)
    assert await state(c, aid) == ("99999999.99", 1, "")  # held with two places
    # the wire refuses the same value sent as the operation's own argument, before it runs
    r = await c.post(f"/api/accounts/{aid}/credit", json={"amount": "100000000"})
    assert_problem(r, 422, "invalid-request")
    r = await c.post(f"/api/accounts/{aid}/credit", json={"amount": "0.125"})
    assert_problem(r, 422, "invalid-request")
    assert await state(c, aid) == ("99999999.99", 1, "")


async def test_a_string_argument_longer_than_declared_is_refused(billing: ServiceClient) -> None:
    c = billing
    aid = await account(c)
    r = await c.post("/api/commands/retag", json={"account": aid, "first": "abc", "second": "def"})
    body = refused(r, "Account.retag: t: string(5)")
    assert body["detail"] == "t: it is at most 5 characters"
    assert await state(c, aid) == ("0", 0, "")
    await ok(
        c, "POST", "/api/commands/retag", 204, json={"account": aid, "first": "ab", "second": "cde"}
    )
    assert await state(c, aid) == ("0", 0, "abcde")


async def test_a_reactions_refused_argument_is_dead_lettered(billing: ServiceClient) -> None:
    c = billing
    aid = await account(c)
    body = {"account": aid, "total": "1", "parts": 3}
    await ok(c, "POST", "/api/commands/request_split", 204, json=body)
    await c.settle()
    assert await state(c, aid) == ("0", 0, "")  # never rounded, never stored
    page = await ok(c, "GET", "/api/admin/dead-letters", headers=OPERATOR)
    (dead,) = page["items"]
    assert dead["event_type"] == "Billing.SplitRequested"
    error = dead["last_error"]
    assert error.startswith(f"Billing.Splitter.on(SplitRequested): Refused: {DETAIL}"), error
    # one that fits is applied
    await ok(c, "POST", "/api/commands/request_split", 204, json={**body, "total": "1.5"})
    await c.settle()
    assert await state(c, aid) == ("0.50", 1, "")  # held with two places


async def test_an_extern_operations_result_is_checked_against_the_field_bounds(
    billing: ServiceClient,
) -> None:
    """The aggregate's only invariant is its `string(5)` field's: checked after the user's code."""
    c = billing
    aid = await account(c)
    r = await c.post(f"/api/accounts/{aid}/annotate", json={"text": "too long"})
    body = assert_problem(r, 422, "invariant-failed")
    assert body["rule"] == "Account: note: string(5)", body
    await ok(c, "POST", f"/api/accounts/{aid}/annotate", 204, json={"text": "short"})
    assert (await ok(c, "GET", f"/api/accounts/{aid}"))["note"] == "short"
