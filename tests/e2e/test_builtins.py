"""The built-in functions through a generated service, on SQLite and PostgreSQL: calendar
arithmetic clamped to the month's end and a duration as a number in derived values, a
precondition and function bodies; the string functions in derived values, a precondition, a
repository filter and criteria, where the database answers what the same expression answers in
memory (exact case, `%` and `_` taken literally, Unicode lengths)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loom.testing import ServiceClient, serve

MODEL = Path(__file__).parent / "models" / "builtin_functions.loom"


def _body(**fields: Any) -> dict[str, Any]:
    return {
        "code": "P-1",
        "validFrom": "2027-01-31",
        "validTo": "2027-12-31",
        "issued": "2027-02-01T01:30:00+02:00",  # 2027-01-31T23:30Z
        **fields,
    }


async def _policy(c: ServiceClient, **fields: Any) -> dict[str, Any]:
    r = await c.post("/api/policies", json=_body(**fields))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _holders(c: ServiceClient, query: str, **params: Any) -> list[str]:
    r = await c.get(f"/api/queries/{query}", params=params)
    assert r.status_code == 200, r.text
    return sorted(p["holder"] for p in r.json())


async def _value(c: ServiceClient, query: str, **params: Any) -> Any:
    r = await c.get(f"/api/queries/{query}", params=params)
    assert r.status_code == 200, r.text
    return r.json()


async def test_calendar_functions(database_url: str) -> None:
    async with serve([MODEL], database_url) as c:
        p = await _policy(c, holder="  Ann Lee ")
        assert p["nextMonth"] == "2027-02-28"  # clamped to the month's end
        assert p["renewal"] == "2028-01-31"
        assert p["daysValid"] == 334 and p["hoursValid"] == 334 * 24
        assert (p["startYear"], p["startMonth"], p["startDay"]) == (2027, 1, 31)
        leap = await _policy(c, holder="Bo", validFrom="2028-02-29", validTo="2028-03-01")
        assert leap["renewal"] == "2029-02-28" and leap["nextMonth"] == "2028-03-29"
        assert leap["daysValid"] == 1

        # a precondition and an assignment
        r = await c.post(f"/api/policies/{p['id']}/extend", json={"months": 2})
        assert r.status_code == 204, r.text
        assert (await c.get(f"/api/policies/{p['id']}")).json()["validTo"] == "2028-02-29"
        other = await _policy(c, holder="Cy", code="Q-1")
        r = await c.post(f"/api/policies/{other['id']}/extend", json={"months": 1})
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == "only a P- policy is extended"
        r = await c.post("/api/commands/renew", json={"id": p["id"], "years": 1})
        assert r.status_code == 204, r.text
        assert (await c.get(f"/api/policies/{p['id']}")).json()["validTo"] == "2029-02-28"
        # beyond the calendar: a 422, never a 500
        r = await c.post(f"/api/policies/{p['id']}/extend", json={"months": 12 * 8000})
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:time-refused"

        # durations as numbers, truncated toward zero
        t0, t1 = "2027-01-01T00:00:00Z", "2027-01-01T01:59:59Z"
        assert await _value(c, "minutes", **{"from": t0, "to": t1}) == 119
        assert await _value(c, "minutes", **{"from": t1, "to": t0}) == -119
        assert await _value(c, "seconds", d="-PT1.5S") == -1
        shifted = await _value(c, "shifted", at="2027-03-31T10:30:00Z", n=-1)
        assert shifted == "2027-02-28T10:30:00Z"


async def test_string_functions_in_criteria(database_url: str) -> None:
    async with serve([MODEL], database_url) as c:
        p = await _policy(c, holder="  Ann Lee ")
        assert p["label"] == "ANN LEE" and p["holderLength"] == 10
        await _policy(c, holder="Bea_100%", code="p-2")
        await _policy(c, holder="Zoë", code="P-3")
        await _policy(c, holder="Hidden", code="P-#4")  # the filter's `contains` hides it
        r = await c.post("/api/policies", json=_body(holder=" \t"))
        assert r.status_code == 422 and r.json()["detail"] == "a holder is named", r.text

        page = (await c.get("/api/policies")).json()
        assert page["total"] == 3
        assert await _holders(c, "holder_has", part="ANN") == ["  Ann Lee "]
        assert await _holders(c, "holder_has", part="lee") == ["  Ann Lee "]
        assert await _holders(c, "holder_has", part="ZOË") == ["Zoë"]
        assert await _holders(c, "holder_has", part="hidden") == []  # the filter holds
        # `%` and `_` are characters, not wildcards
        assert await _holders(c, "holder_has", part="_100%") == ["Bea_100%"]
        assert await _holders(c, "holder_has", part="a%") == []
        assert await _holders(c, "holder_has", part="") == ["  Ann Lee ", "Bea_100%", "Zoë"]
        # exact case, as in memory (SQLite's LIKE would ignore it)
        assert await _holders(c, "code_starts", p="P-") == ["  Ann Lee ", "Zoë"]
        assert await _holders(c, "code_starts", p="p-") == ["Bea_100%"]
        # characters, not bytes; trim before counting
        assert await _holders(c, "long_holder", n=6) == ["  Ann Lee ", "Bea_100%"]
        assert await _holders(c, "long_holder", n=3) == [
            "  Ann Lee ",
            "Bea_100%",
        ]  # Zoë: 3, 4 bytes
        assert await _holders(c, "long_holder", n=2) == ["  Ann Lee ", "Bea_100%", "Zoë"]
        assert await _holders(c, "shouted", s="BEA_100%") == ["Bea_100%"]


async def test_date_parts_in_criteria(database_url: str) -> None:
    async with serve([MODEL], database_url) as c:
        await _policy(c, holder="Ann")  # issued 2027-01-31T23:30Z, valid from 2027-01-31
        await _policy(c, holder="Bo", validFrom="2028-02-29", validTo="2028-03-01")
        await _policy(c, holder="Cy", validFrom="2028-02-01", validTo="2028-03-01")
        await _policy(c, holder="Di", issued="9999-12-31T12:00:00Z")
        # the UTC day of a datetime, whatever offset it was sent with
        assert await _holders(c, "issued_on", y=2027, md=131) == ["Ann", "Bo", "Cy"]
        assert await _holders(c, "issued_on", y=2027, md=201) == []
        assert await _holders(c, "issued_on", y=9999, md=1231) == ["Di"]
        assert await _holders(c, "starts_in", y=2028, m=2) == []  # both end on the 1st
        assert await _holders(c, "starts_in", y=2027, m=1) == ["Ann", "Di"]
