"""A repository's declared finds are public: GET /api/<plural>/find/<find_snake>?<params>. One
result or the standard 404 for `Agg?` and `Agg`, a list for `Agg[]`. Criteria lookups
(`Repo.find(Criterion)`) stay internal: they have no route."""

from __future__ import annotations

from pathlib import Path

from loom.testing import serve

MODEL = """
context Fleet {
  aggregate Depot with crudish { name: string }
  aggregate Truck with crudish {
    plate: string
    depot: Depot id
    seats: int
  }
  repository Depots for Depot { }
  repository Trucks for Truck {
    find byPlate(plate: string): Truck?
    find byDepotAndSeats(depot: Depot id, seats: int): Truck
    find byDepot(depot: Depot id): Truck[]
  }
  criterion Big of Truck = seats > 3
  queryHandler anyBig(): string {
    if let t = Trucks.find(Big) { return t.plate } else { return "" }
  }
}
"""


async def test_declared_finds_have_routes(database_url: str, tmp_path: Path) -> None:
    model = tmp_path / "fleet.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        depot = (await c.post("/api/depots", json={"name": "north"})).json()["id"]
        other = (await c.post("/api/depots", json={"name": "south"})).json()["id"]
        for plate, seats in (("AB-1", 2), ("AB-2", 5)):
            r = await c.post("/api/trucks", json={"plate": plate, "depot": depot, "seats": seats})
            assert r.status_code == 201, r.text

        r = await c.get("/api/trucks/find/by_plate", params={"plate": "AB-2"})
        assert r.status_code == 200, r.text
        assert r.json()["seats"] == 5

        miss = await c.get("/api/trucks/find/by_plate", params={"plate": "ZZ-9"})
        assert miss.status_code == 404
        assert miss.headers["content-type"] == "application/problem+json"
        assert miss.json()["type"] == "urn:loom:problem:not-found"
        assert miss.json()["aggregate"] == "Truck"

        r = await c.get("/api/trucks/find/by_depot_and_seats", params={"depot": depot, "seats": 2})
        assert r.status_code == 200 and r.json()["plate"] == "AB-1"
        r = await c.get("/api/trucks/find/by_depot_and_seats", params={"depot": other, "seats": 2})
        assert r.status_code == 404

        r = await c.get("/api/trucks/find/by_depot", params={"depot": depot})
        assert r.status_code == 200
        assert sorted(t["plate"] for t in r.json()) == ["AB-1", "AB-2"]
        r = await c.get("/api/trucks/find/by_depot", params={"depot": other})
        assert r.status_code == 200 and r.json() == []

        # a missing or malformed parameter is a 422 problem, not a 500
        r = await c.get("/api/trucks/find/by_depot_and_seats", params={"depot": "nope"})
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"

        paths = (await c.get("/openapi.json")).json()["paths"]
        assert "/api/trucks/find/by_plate" in paths
        # criteria lookups stay internal: only the query handler that uses one is routed
        assert [p for p in paths if "big" in p.lower()] == ["/api/queries/any_big"]


async def test_an_aggregate_whose_plural_is_a_keyword(database_url: str, tmp_path: Path) -> None:
    # `A` -> plural `as`: every generated variable named after it must still be valid Python
    model = tmp_path / "k.loom"
    model.write_text(
        """
context K {
  aggregate A with crudish { n: int  operation bump() { n += 1 } }
  repository As for A { find byN(n: int): A? }
  commandHandler Bump(id: A id) { let a = As.getById(id)  a.bump() }
}
"""
    )
    async with serve([model], database_url) as c:
        a = (await c.post("/api/as", json={"n": 1})).json()["id"]
        assert (await c.post("/api/commands/bump", json={"id": a})).status_code == 204
        assert (await c.post(f"/api/as/{a}/bump", json={})).status_code == 204
        assert (await c.get("/api/as/find/by_n", params={"n": 3})).json()["id"] == a
