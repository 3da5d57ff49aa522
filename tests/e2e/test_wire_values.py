"""Exact and strict wire values, over HTTP on SQLite and PostgreSQL (tests/e2e/models/wire_values.loom):
decimals are exact within their bounds (50 digits before the point, 50 after) and never rounded
except by `/`; out-of-bounds input and arithmetic are 422s; an `int` in a JSON body is a JSON
integer; strings refuse NUL and lone surrogates; `string(N)` is enforced on the wire, by the
aggregate and in storage. Every refusal leaves the stored data as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import text

from loom.runtime import ArithmeticRefused, decimals
from loom.testing import ServiceClient, serve

from .conftest import ROOT
from .test_banking import assert_problem

MODEL = [ROOT / "tests/e2e/models/wire_values.loom"]
EXACT = "0.1000000000000000055511151231257827"
MAX = "9" * 50  # the largest whole decimal
JSON = {"content-type": "application/json"}


@pytest.fixture
async def wire(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


async def ok(c: ServiceClient, method: str, path: str, status: int = 200, **kw: Any) -> Any:
    r = await c.request(method, path, **kw)
    assert r.status_code == status, r.text
    return r.json() if r.content else None


async def new_thing(c: ServiceClient, **fields: Any) -> dict[str, Any]:
    made: dict[str, Any] = await ok(c, "POST", "/api/things", 201, json={"name": "t", **fields})
    return made


async def amount_after(c: ServiceClient, start: str, op: str, body: str) -> str:
    """The stored amount after `op` with the raw JSON `body` on a thing holding `start`."""
    tid = (await new_thing(c, amount=start))["id"]
    await ok(c, "POST", f"/api/things/{tid}/{op}", 204, content=body, headers=JSON)
    got: str = (await ok(c, "GET", f"/api/things/{tid}"))["amount"]
    return got


# --------------------------------------------------------------------------------------------------
# Decimals: exact arithmetic


async def test_addition_is_exact_beyond_28_digits(wire: ServiceClient) -> None:
    tid = (await new_thing(wire, amount=EXACT))["id"]
    for by in ("1", "12345678901234567890.123456789"):
        await ok(wire, "POST", f"/api/things/{tid}/add", 204, json={"by": by})
    got = (await ok(wire, "GET", f"/api/things/{tid}"))["amount"]
    assert got == "12345678901234567891.2234567890000000055511151231257827"
    # what Python's default context (28 significant digits) would have stored
    assert str(Decimal(EXACT) + 1 + Decimal("12345678901234567890.123456789")) == (
        "12345678901234567891.22345679"
    )


async def test_multiplication_and_negation_are_exact(wire: ServiceClient) -> None:
    a, b = "12345678901234567890.12345678901234567890", "1234567890123456789.98765432109876543210"
    got = await amount_after(wire, a, "scale", f'{{"factor": "{b}"}}')
    exact = Decimal(a) * Decimal(b)  # Python's default context: rounded to 28 digits
    assert Decimal(got) != exact
    assert got == "15241578753238836762536198888736473099.9984758421246761163237463801111263526900"
    assert Decimal(got) == decimals.ARITHMETIC.multiply(Decimal(a), Decimal(b))
    assert await amount_after(wire, "-" + EXACT, "negate", "{}") == EXACT


@pytest.mark.parametrize(
    ("start", "body", "expected"),
    [
        ("1", '{"parts": 4}', "0.25"),
        ("10.00", '{"parts": 4}', "2.50"),
        ("1", '{"parts": 3}', "0." + "3" * 50),  # rounded half-even at 50 places, the only rounding
        ("2", '{"parts": 3}', "0." + "6" * 49 + "7"),
        ("-1", '{"parts": 8}', "-0.125"),
    ],
)
async def test_division_is_exact_or_rounded_at_fifty_places(
    wire: ServiceClient, start: str, body: str, expected: str
) -> None:
    assert await amount_after(wire, start, "split", body) == expected


async def test_a_function_divides_by_the_same_rule(wire: ServiceClient) -> None:
    # half-even at the 50th place: 0.5e-50 -> 0, 1.5e-50 -> 2e-50 (answered without an exponent)
    assert await amount_after(wire, "1E-50", "halve", "{}") == "0." + "0" * 50
    assert await amount_after(wire, "3E-50", "halve", "{}") == "0." + "0" * 49 + "2"


@pytest.mark.parametrize(
    ("start", "op", "body", "detail"),
    [
        (MAX, "add", '{"by": 1}', "the result of `+` does not fit"),
        ("-" + MAX, "add", '{"by": -1}', "the result of `+` does not fit"),
        ("1E+49", "scale", '{"factor": 10}', "the result of `*` does not fit"),
        ("1E-30", "scale", '{"factor": "1E-30"}', "the result of `*` does not fit"),
        ("1", "split", '{"parts": 0}', "`/` by zero has no value"),
        ("1E-50", "split", '{"parts": 1E-1}', "invalid"),  # not an int: refused at the wire
    ],
)
async def test_arithmetic_that_does_not_fit_is_refused_not_rounded(
    wire: ServiceClient, start: str, op: str, body: str, detail: str
) -> None:
    made = await new_thing(wire, amount=start)
    r = await wire.post(f"/api/things/{made['id']}/{op}", content=body, headers=JSON)
    if detail == "invalid":
        assert_problem(r, 422, "invalid-request")
    else:
        problem = assert_problem(r, 422, "arithmetic-refused")
        assert problem["detail"].startswith(detail), problem["detail"]
    assert await ok(wire, "GET", f"/api/things/{made['id']}") == made  # nothing changed


async def test_a_workflow_computes_exactly_too(wire: ServiceClient) -> None:
    a, b = "1234567890.1234567890123456789", "9876543210.9876543210987654321"
    got = await ok(wire, "POST", "/api/workflows/multiply", json={"a": a, "b": b, "c": 1})
    # the exact product, as integers: 12345678901234567890123456789 * 98765432109876543210987654321
    digits = str(12345678901234567890123456789 * 98765432109876543210987654321 + 10**38)
    assert got == f"{digits[:-38]}.{digits[-38:]}"
    assert got == "12193263113702179523.61850327336229233322374638011112635269"
    r = await wire.post("/api/workflows/multiply", json={"a": "1E+40", "b": "1E+10", "c": 0})
    assert_problem(r, 422, "arithmetic-refused")
    r = await wire.post("/api/workflows/multiply", json={"a": "1", "b": "1", "c": "1"})
    assert_problem(r, 422, "invalid-request")


async def test_a_domain_method_called_directly_follows_the_same_rules(wire: ServiceClient) -> None:
    # a user's own test, or a reactor, calling the domain: no HTTP request sets a context for it
    thing = wire.module("wire.domain").Thing.create(
        name="t",
        label="",
        count=0,
        amount=Decimal(EXACT),
        tags=[],
        notes=[],
        memo=None,
        color=wire.module("wire.domain").Color.RED,
        at=None,
        day=None,
        flag=False,
    )
    thing.add(Decimal("12345678901234567890.123456789"))
    assert thing.amount == Decimal("12345678901234567890.2234567890000000055511151231257827")
    with pytest.raises(ArithmeticRefused):
        thing.scale(Decimal("1E+40"))


# --------------------------------------------------------------------------------------------------
# Bad input: one table, every case answered 422 with the path of the bad member, nothing stored


def raw(body: str) -> dict[str, Any]:
    return {"content": body, "headers": JSON}


BAD_BODIES = [
    # decimals: bounds, NaN/Infinity, absurd exponents, non-numbers
    ("decimal-nan", '{"name": "t", "amount": "NaN"}', "body.amount"),
    ("decimal-snan", '{"name": "t", "amount": "sNaN"}', "body.amount"),
    ("decimal-infinity", '{"name": "t", "amount": "Infinity"}', "body.amount"),
    ("decimal-minus-infinity", '{"name": "t", "amount": "-Infinity"}', "body.amount"),
    ("decimal-json-nan", '{"name": "t", "amount": NaN}', "body"),
    ("decimal-huge-number", '{"name": "t", "amount": 1e999999999}', "body.amount"),
    # an exponent beyond what Decimal can represent fails in the JSON parser itself
    ("decimal-exponent-beyond-decimal", '{"name": "t", "amount": 1e99999999999999999999}', "body"),
    ("decimal-huge-string", '{"name": "t", "amount": "1E+1000000"}', "body.amount"),
    ("decimal-9e999999", '{"name": "t", "amount": "9e999999"}', "body.amount"),
    ("decimal-51-digits", f'{{"name": "t", "amount": "1{MAX}"}}', "body.amount"),
    ("decimal-51-places", '{"name": "t", "amount": "0.' + "0" * 50 + '1"}', "body.amount"),
    ("decimal-tiny", '{"name": "t", "amount": 1e-999999}', "body.amount"),
    ("decimal-bool", '{"name": "t", "amount": true}', "body.amount"),
    ("decimal-text", '{"name": "t", "amount": "12 euros"}', "body.amount"),
    ("decimal-underscore", '{"name": "t", "amount": "1_000"}', "body.amount"),
    (
        "decimal-nested",
        '{"name": "t", "notes": [{"text": "a", "weight": "NaN"}]}',
        "body.notes.0.weight",
    ),
    # ints: a JSON integer only
    ("int-true", '{"name": "t", "count": true}', "body.count"),
    ("int-string", '{"name": "t", "count": "1"}', "body.count"),
    ("int-exponent", '{"name": "t", "count": 1e3}', "body.count"),
    ("int-point", '{"name": "t", "count": 1.0}', "body.count"),
    ("int-too-big", '{"name": "t", "count": 9223372036854775808}', "body.count"),
    # bools: true or false only
    ("bool-one", '{"name": "t", "flag": 1}', "body.flag"),
    ("bool-string", '{"name": "t", "flag": "true"}', "body.flag"),
    # strings: no lone surrogate, no NUL, wherever they are
    ("surrogate-field", '{"name": "t", "label": "\\ud800"}', "body.label"),
    ("surrogate-low", '{"name": "t", "label": "a\\udfffb"}', "body.label"),
    ("surrogate-list", '{"name": "t", "tags": ["ok", "\\ud800"]}', "body.tags.1"),
    ("surrogate-nested", '{"name": "t", "notes": [{"text": "\\ud834"}]}', "body.notes.0.text"),
    ("surrogate-key", '{"name": "t", "\\ud800": 1}', "body"),
    ("nul-field", '{"name": "t", "label": "a\\u0000b"}', "body.label"),
    ("nul-nested", '{"name": "t", "notes": [{"text": "\\u0000"}]}', "body.notes.0.text"),
    # string(N)
    ("too-long", '{"name": "' + "x" * 21 + '"}', "body.name"),
    ("too-long-list", '{"name": "t", "tags": ["123456"]}', "body.tags.0"),
    ("too-long-nested", '{"name": "t", "notes": [{"text": "12345678901"}]}', "body.notes.0.text"),
    ("too-long-optional", '{"name": "t", "memo": "123456789"}', "body.memo"),
]


@pytest.mark.parametrize(("case", "body", "path"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES])
async def test_bad_body_values_are_422_and_store_nothing(
    wire: ServiceClient, case: str, body: str, path: str
) -> None:
    r = await wire.post("/api/things", **raw(body))
    problem = assert_problem(r, 422, "invalid-request")
    assert path in [e["path"] for e in problem["errors"]], problem
    assert (await ok(wire, "GET", "/api/things"))["total"] == 0


BAD_OPERATIONS = [
    ("add-nan", "add", '{"by": "NaN"}', "body.by"),
    ("add-huge", "add", '{"by": 1e999999999}', "body.by"),
    ("bump-true", "bump", '{"by": true}', "body.by"),
    ("bump-string", "bump", '{"by": "2"}', "body.by"),
    ("rename-surrogate", "rename", '{"to": "\\udc00"}', "body.to"),
    ("rename-nul", "rename", '{"to": "\\u0000"}', "body.to"),
]


@pytest.mark.parametrize(
    ("case", "op", "body", "path"), BAD_OPERATIONS, ids=[c[0] for c in BAD_OPERATIONS]
)
async def test_bad_operation_values_are_422_and_change_nothing(
    wire: ServiceClient, case: str, op: str, body: str, path: str
) -> None:
    made = await new_thing(wire)
    r = await wire.post(f"/api/things/{made['id']}/{op}", **raw(body))
    problem = assert_problem(r, 422, "invalid-request")
    assert path in [e["path"] for e in problem["errors"]], problem
    assert await ok(wire, "GET", f"/api/things/{made['id']}") == made


BAD_QUERIES = [
    ("query-int-text", "/api/things/find/by_count", {"count": "many"}, "query.count"),
    ("query-int-point", "/api/things/find/by_count", {"count": "1.5"}, "query.count"),
    ("query-decimal-nan", "/api/things/find/by_amount", {"amount": "NaN"}, "query.amount"),
    ("query-decimal-huge", "/api/things/find/by_amount", {"amount": "1E+1000000"}, "query.amount"),
    ("query-nul", "/api/things/find/by_name", {"name": "a\x00"}, "query.name"),
    ("query-too-long", "/api/things/find/by_name", {"name": "x" * 21}, "query.name"),
    ("payload-query-too-long", "/api/queries/find", {"name": "x" * 21}, "query.name"),
    ("payload-query-nul", "/api/queries/find", {"name": "\x00"}, "query.name"),
    ("payload-query-int", "/api/queries/find", {"name": "a", "count": "x"}, "query.count"),
]


@pytest.mark.parametrize(
    ("case", "path", "params", "member"), BAD_QUERIES, ids=[c[0] for c in BAD_QUERIES]
)
async def test_bad_query_values_are_422(
    wire: ServiceClient, case: str, path: str, params: dict[str, str], member: str
) -> None:
    problem = assert_problem(await wire.get(path, params=params), 422, "invalid-request")
    assert member in [e["path"] for e in problem["errors"]], problem


async def test_query_and_path_parameters_are_parsed_from_text(wire: ServiceClient) -> None:
    made = await new_thing(wire, count=3, amount="1E+3")
    assert made["amount"] == "1000"  # canonical: no exponent on output
    assert (await new_thing(wire, name="small", amount="1E-8"))["amount"] == "0.00000001"
    assert await ok(wire, "GET", "/api/things/find/by_count", params={"count": "3"}) == [made]
    assert await ok(wire, "GET", "/api/things/find/by_amount", params={"amount": "1000.0"}) == [
        made
    ]
    assert await ok(wire, "GET", "/api/things/find/by_name", params={"name": "t"}) == made
    assert await ok(wire, "GET", "/api/queries/find", params={"name": "t", "count": "3"}) == [made]
    assert_problem(await wire.get("/api/things/not-a-uuid"), 422, "invalid-request")
    assert_problem(await wire.get("/api/things/%00"), 422, "invalid-request")


async def test_good_values_at_the_bounds_round_trip(wire: ServiceClient) -> None:
    widest = f"-{MAX}.{'9' * 50}"
    made = await new_thing(
        wire,
        name="x" * 20,
        label="emoji 😀 and é, and U+FFFF \uffff",
        count=-(2**63),
        amount=widest,
        tags=["12345"],
        notes=[{"text": "1234567890", "weight": "1E-50"}],
        memo="12345678",
    )
    got = await ok(wire, "GET", f"/api/things/{made['id']}")
    assert got == made
    assert got["amount"] == widest and got["count"] == -(2**63)
    assert got["notes"] == [{"text": "1234567890", "weight": "0." + "0" * 49 + "1"}]
    # a JSON number is read exactly too, and trailing zeros beyond 50 places are not digits
    r = await wire.post(
        "/api/things", **raw('{"name": "n", "amount": 0.1000000000000000055511151231257827}')
    )
    assert r.status_code == 201 and r.json()["amount"] == EXACT
    r = await wire.post("/api/things", **raw('{"name": "z", "amount": "1.' + "0" * 60 + '"}'))
    assert r.status_code == 201 and r.json()["amount"] == "1." + "0" * 50


# --------------------------------------------------------------------------------------------------
# string(N) beyond the wire


async def test_an_operation_assigning_a_longer_string_is_refused(wire: ServiceClient) -> None:
    made = await new_thing(wire)
    r = await wire.post(f"/api/things/{made['id']}/rename", json={"to": "x" * 21})
    problem = assert_problem(r, 422, "invariant-failed")
    assert problem["rule"] == "Thing: name: string(20)"
    assert problem["detail"] == "name: it is at most 20 characters"
    r = await wire.post(f"/api/things/{made['id']}/remember", json={"text": "x" * 11})
    assert assert_problem(r, 422, "invariant-failed")["rule"] == "Note: text: string(10)"
    assert await ok(wire, "GET", f"/api/things/{made['id']}") == made
    await ok(wire, "POST", f"/api/things/{made['id']}/rename", 204, json={"to": "y" * 20})
    assert (await ok(wire, "GET", f"/api/things/{made['id']}"))["name"] == "y" * 20


async def test_an_event_raised_with_a_longer_string_is_refused(wire: ServiceClient) -> None:
    made = await new_thing(wire)
    r = await wire.post(f"/api/things/{made['id']}/shout", json={"text": "x" * 11})
    assert assert_problem(r, 422, "invariant-failed")["rule"] == "Shouted: text: string(10)"
    await ok(wire, "POST", f"/api/things/{made['id']}/shout", 204, json={"text": "x" * 10})
    # the projection keyed by that string: its key is a path parameter, checked like any string
    got = await ok(wire, "GET", f"/api/projections/shouts/{'x' * 10}")
    assert (got["text"], got["times"]) == ("x" * 10, 1)
    problem = assert_problem(
        await wire.get("/api/projections/shouts/a%00b"), 422, "invalid-request"
    )
    assert [e["path"] for e in problem["errors"]] == ["path.key"]


async def test_string_lengths_in_the_schema_and_the_contract(wire: ServiceClient) -> None:
    spec = await ok(wire, "GET", "/openapi.json")
    props = spec["components"]["schemas"]["ThingCreateInput"]["properties"]
    assert props["name"]["maxLength"] == 20
    assert props["tags"]["items"]["maxLength"] == 5
    assert "maxLength" not in props["label"]
    if wire.service.is_sqlite:
        return
    table = wire.module("wire.tables").things.name
    async with wire.service.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT column_name, data_type, character_maximum_length FROM "
                "information_schema.columns WHERE table_name = :table "
                "AND column_name IN ('name', 'memo', 'label') ORDER BY column_name"
            ),
            {"table": table},
        )
        assert [tuple(r) for r in rows] == [
            ("label", "character varying", None),
            ("memo", "character varying", 8),
            ("name", "character varying", 20),
        ]
