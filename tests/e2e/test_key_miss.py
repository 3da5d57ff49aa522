"""A miss by natural key or declared find says which key missed (`no Due with booking …`), never
an id the caller did not give (over HTTP, on both databases)."""

from __future__ import annotations

from pathlib import Path

from loom.testing import serve

MODEL = """
context Billing {
  aggregate Due with crudish {
    booking: string
    amount: int
    paid: bool = false
    unique (booking)
    operation settle() { paid := true }
  }
  repository Dues for Due {
    find byAmount(amount: int): Due
  }
  workflow settleFor {
    create(b: string) {
      let d = Dues.getBy(booking: b)
      d.settle()
    }
  }
  workflow settleAmount {
    create(n: int) {
      let d = Dues.byAmount(n)
      d.settle()
    }
  }
}
"""


async def test_a_key_miss_names_the_key(database_url: str, tmp_path: Path) -> None:
    model = tmp_path / "billing.loom"
    model.write_text(MODEL)
    async with serve([model], database_url) as c:
        r = await c.post("/api/dues", json={"booking": "B-1", "amount": 5})
        assert r.status_code == 201, r.text
        r = await c.post("/api/workflows/settle_for", json={"b": "B-1"})
        assert r.status_code in (200, 204), r.text

        r = await c.post("/api/workflows/settle_for", json={"b": "B-404"})
        assert r.status_code == 404, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["detail"] == "no Due with booking B-404"

        r = await c.post("/api/workflows/settle_amount", json={"n": 99})
        assert r.status_code == 404, r.text
        assert r.json()["detail"] == "no Due with amount 99"


KITCHEN = """
context Kitchen {
  aggregate Order with crudish { item: string }
  aggregate Ticket with crudish {
    order: Order id
    station: string
    done: bool = false
    unique (order)
    internal operation finish() { done := true }
  }
  repository Tickets for Ticket {
    find byOrder(placed: Order id): Ticket
    find byStationAndOrder(station: string, order: Order id): Ticket?
  }
  workflow finishFor {
    create(o: Order id) {
      let t = Tickets.byOrder(o)
      t.finish()
    }
  }
}
"""


async def test_a_declared_find_miss_names_its_key(database_url: str, tmp_path: Path) -> None:
    # the key is the order's id, not the ticket's: the detail says which field it was matched on
    model = tmp_path / "kitchen.loom"
    model.write_text(KITCHEN)
    async with serve([model], database_url) as c:
        order = (await c.post("/api/orders", json={"item": "soup"})).json()["id"]
        missing = (await c.post("/api/orders", json={"item": "bread"})).json()["id"]
        r = await c.post("/api/tickets", json={"order": order, "station": "grill"})
        assert r.status_code == 201, r.text
        r = await c.post("/api/workflows/finish_for", json={"o": order})
        assert r.status_code in (200, 204), r.text

        misses = {
            "workflow body": await c.post("/api/workflows/finish_for", json={"o": missing}),
            "route, Ticket": await c.get("/api/tickets/find/by_order", params={"placed": missing}),
            "route, Ticket?": await c.get(
                "/api/tickets/find/by_station_and_order",
                params={"station": "grill", "order": missing},
            ),
        }
        details = {}
        for path, r in misses.items():
            assert r.status_code == 404, (path, r.text)
            assert r.headers["content-type"].startswith("application/problem+json")
            assert r.json()["type"] == "urn:loom:problem:not-found"
            assert r.json()["aggregate"] == "Ticket"
            details[path] = r.json()["detail"]
        assert details == {
            "workflow body": f"no Ticket with order {missing}",
            "route, Ticket": f"no Ticket with order {missing}",
            "route, Ticket?": f"no Ticket with station grill and order {missing}",
        }
