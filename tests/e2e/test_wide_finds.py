"""Reads with three parameters through a generated service, on SQLite and PostgreSQL: a declared
find's route (one row and a list), and a declared find, a criterion and a retrieval called from
handler bodies. The generated code passes such reads their arguments by keyword (past two), so
each must reach the parameter it names: the rooms below differ in one field at a time, so an
argument bound to the wrong parameter would find another booking, or none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loom.testing import ServiceClient, serve

MODEL = Path(__file__).parent / "models" / "wide_finds.loom"

BOOKINGS = [
    ("A", 1, "101", "Ann"),
    ("A", 1, "102", "Bo"),
    ("A", 2, "101", "Cy"),
    ("B", 1, "101", "Di"),
]


async def _book(c: ServiceClient) -> None:
    for building, floor, room, guest in BOOKINGS:
        body = {"building": building, "floor": floor, "room": room, "guest": guest}
        r = await c.post("/api/bookings", json=body)
        assert r.status_code == 201, r.text


async def _get(c: ServiceClient, path: str, **params: Any) -> Any:
    r = await c.get(path, params=params)
    assert r.status_code == 200, r.text
    return r.json()


async def test_reads_with_three_parameters_reach_their_parameters(database_url: str) -> None:
    async with serve([MODEL], database_url) as c:
        await _book(c)
        for building, floor, room, guest in BOOKINGS:
            where = {"building": building, "floor": floor, "room": room}
            found = await _get(c, "/api/bookings/find/by_building_and_floor_and_room", **where)
            assert found["guest"] == guest
            assert (await _get(c, "/api/queries/who_is_in", **where)) == {"guest": guest}
            assert (await _get(c, "/api/queries/first_placed", **where)) == {"guest": guest}
            assert await _get(c, "/api/queries/count_placed", **where) == 1
        path = "/api/bookings/find/by_building_and_floor_and_guest"
        listed = await _get(c, path, building="A", floor=1, guest="Bo")
        assert [b["room"] for b in listed] == ["102"]
        assert await _get(c, path, building="A", floor=2, guest="Bo") == []
        nobody: dict[str, str | int] = {"building": "A", "floor": 3, "room": "101"}
        r = await c.get("/api/queries/who_is_in", params=nobody)
        assert r.status_code == 404 and r.json()["type"].startswith("urn:loom:problem:"), r.text
        assert await _get(c, "/api/queries/count_placed", **nobody) == 0
