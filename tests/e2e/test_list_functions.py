"""`count`, `sum`, `x in xs`, `xs + [x]` and `isPresent` over HTTP on SQLite and PostgreSQL
(tests/e2e/models/list_functions.loom): derived values, an invariant, gates and preconditions, a
function, a queryHandler's loop, a workflow body, and criteria translated to SQL (`status in
statuses`, `claimant in names`, `!isPresent(settledAt)`); list fields appended to by operations
are stored and read back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_wire_values import ok

MODEL = [ROOT / "tests/e2e/models/list_functions.loom"]


@pytest.fixture
async def claims(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def claim(c: ServiceClient, claimant: str, **fields: Any) -> str:
    made = await ok(c, "POST", "/api/claims", 201, json={"claimant": claimant, **fields})
    cid: str = made["id"]
    return cid


async def pay(c: ServiceClient, cid: str, amount: str, tag: str, status: int = 204) -> Any:
    return await ok(
        c, "POST", f"/api/claims/{cid}/pay", status, json={"amount": amount, "tag": tag}
    )


async def test_appended_lists_are_stored_and_summed(claims: ServiceClient) -> None:
    cid = await claim(claims, "ann")
    fresh = await ok(claims, "GET", f"/api/claims/{cid}")
    assert (fresh["paid"], fresh["payments"], fresh["settled"]) == ("0.00", 0, False)
    assert (fresh["waited"], fresh["dayTotal"]) == ("PT0S", 0)

    await pay(claims, cid, "100.50", "first")
    await pay(claims, cid, "200.25", "second")
    body = {"span": "PT1H30M", "day": 3}
    await ok(claims, "POST", f"/api/claims/{cid}/wait", 204, json=body)
    body = {"span": "P1D", "day": 4}
    await ok(claims, "POST", f"/api/claims/{cid}/wait", 204, json=body)

    got = await ok(claims, "GET", f"/api/claims/{cid}")
    assert got["amounts"] == ["100.50", "200.25"]
    assert got["tags"] == ["first", "second"]
    assert got["history"] == [
        {"status": "Open", "note": "paid first"},
        {"status": "Open", "note": "paid second"},
    ]
    assert (got["paid"], got["payments"]) == ("300.75", 2)
    assert (got["waited"], got["dayTotal"], got["days"]) == ("P1DT1H30M", 7, [3, 4])


async def test_gates_preconditions_and_the_invariant(claims: ServiceClient) -> None:
    cid = await claim(claims, "ann", limit="500.00")
    await pay(claims, cid, "400.00", "a")
    # `fits(amount)`: sum(amounts) + amount <= limit
    refused = await pay(claims, cid, "100.01", "b", 422)
    assert "the payment would pass the limit" in refused["detail"]
    await pay(claims, cid, "50.00", "b")
    await pay(claims, cid, "10.00", "c")
    # `count(amounts) < 3`
    refused = await pay(claims, cid, "1.00", "d", 422)
    assert "three payments at most" in refused["detail"]

    # the invariant `sum(amounts) <= limit` holds on a PATCH too
    r = await claims.patch(f"/api/claims/{cid}", json={"limit": "100.00"})
    assert r.status_code == 422, r.text
    assert "over the annual limit" in r.text

    # `when !("closed" in tags)`
    other = await claim(claims, "bob", tags=["closed"])
    r = await claims.post(f"/api/claims/{other}/pay", json={"amount": "1.00", "tag": "x"})
    assert r.status_code == 422, r.text
    assert r.json()["rule"] == 'Claim.pay: when !("closed" in tags)'


async def test_is_present_in_a_gate_and_a_criterion(claims: ServiceClient) -> None:
    a = await claim(claims, "ann")
    b = await claim(claims, "bob")
    rejected = await claim(claims, "cy", status="Rejected")
    await ok(claims, "POST", f"/api/claims/{a}/settle", 204)
    got = await ok(claims, "GET", f"/api/claims/{a}")
    assert got["settled"] is True and got["status"] == "Settled"
    # `when !isPresent(settledAt) && status in [Open]`
    for refused in (a, rejected):
        r = await claims.post(f"/api/claims/{refused}/settle")
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:state-gate-refused"

    # `status in statuses && !isPresent(settledAt)`, in SQL
    one = {"statuses": ["Open"]}
    assert await ok(claims, "GET", "/api/queries/open_count", params=one) == 1  # b
    both = {"statuses": ["Open", "Rejected"]}
    assert await ok(claims, "GET", "/api/queries/open_count", params=both) == 2  # b, cy
    settled = {"statuses": ["Settled"]}
    assert await ok(claims, "GET", "/api/queries/open_count", params=settled) == 0
    assert await ok(claims, "GET", "/api/queries/open_count") == 0  # no statuses: none match
    assert b != rejected
    # a member the enum lacks is the client's mistake: a 422 problem
    r = await claims.get("/api/queries/open_count", params={"statuses": ["Open", "Bogus"]})
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"


async def test_membership_criterion_and_a_loop_that_sums(claims: ServiceClient) -> None:
    a = await claim(claims, "ann")
    b = await claim(claims, "bob")
    await claim(claims, "cy")
    await pay(claims, a, "10.00", "vip")
    await pay(claims, a, "5.50", "late")
    await pay(claims, b, "1.25", "vip")

    params = {"names": ["ann", "bob"], "tag": "vip"}
    totals = await ok(claims, "GET", "/api/queries/totals_of", params=params)
    assert totals == {"claims": 2, "paid": "16.75", "tagged": 2}
    params = {"names": ["ann"], "tag": "late"}
    totals = await ok(claims, "GET", "/api/queries/totals_of", params=params)
    assert totals == {"claims": 1, "paid": "15.50", "tagged": 1}
    params = {"names": ["nobody"], "tag": "vip"}
    totals = await ok(claims, "GET", "/api/queries/totals_of", params=params)
    assert totals == {"claims": 0, "paid": "0", "tagged": 0}


async def test_a_workflow_body_counts_sums_and_tests_absence(claims: ServiceClient) -> None:
    async def tally(**body: Any) -> int:
        out: int = await ok(claims, "POST", "/api/workflows/tally", json=body)
        return out

    assert await tally(days=[1, 2, 3], day=9) == 6
    assert await tally(days=[1, 2, 3], day=2) == 1006
    assert await tally(days=[1, 2, 3], day=9, note="n") == 406  # count(days + [day]) is 4
    assert await tally(days=[], day=0, note=None) == 0


async def test_a_string_function_of_a_field_in_a_list(claims: ServiceClient) -> None:
    for name in (" Ann ", "ANN", "bob", "Zed", "cy"):
        await claim(claims, name)

    async def named(*names: str) -> int:
        n: int = await ok(claims, "GET", "/api/queries/named_count", params={"names": names})
        return n

    # `lower(trim(claimant)) in names || upper(claimant) in ["ZED", "CY"]`: Zed and cy always
    assert await named() == 2
    assert await named("ann") == 4  # " Ann " and "ANN" fold to "ann"
    assert await named("ann", "bob") == 5
    assert await named("Ann") == 2  # nothing folds to "Ann"
    assert await named("zed") == 2  # Zed once, though both sides of `||` match it
