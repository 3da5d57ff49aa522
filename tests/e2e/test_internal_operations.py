"""`internal operation`: no route and no OpenAPI entry, yet the context's own code runs it — a
command workflow, a reaction, a command handler and a timeout — over HTTP on both databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from loom.testing import ServiceClient, VirtualClock, serve

MODEL = """
context Billing {
  aggregate Due with crudish {
    amount: int
    paid: bool = false
    payment: string = ""
    lapsed: bool = false
    waived: bool = false
    notes: int = 0
    internal operation settle(p: string) when !paid {
      paid := true
      payment := p
    }
    internal operation lapse() when !paid { lapsed := true }
    internal operation waive() { waived := true }
    internal operation note() { notes += 1 }
  }
  repository Dues for Due { }
  event PaymentReceived { due: Due id, payment: string }
  event DueOpened { due: Due id }

  workflow pay {
    create(due: Due id, payment: string) {
      emit PaymentReceived { due: due, payment: payment }
    }
  }
  workflow settleDue {
    on(e: PaymentReceived) {
      let d = Dues.getById(e.due)
      d.settle(e.payment)
    }
  }
  workflow open {
    create(amount: int): Due id {
      let d = Due.create({ amount: amount })
      emit DueOpened { due: d.id }
      return d.id
    }
  }
  workflow deadline {
    due: Due id
    create(e: DueOpened) by e.due { schedule lapse after 1h }
    on timeout lapse {
      let d = Dues.getById(due)
      d.lapse()
      complete
    }
  }
  workflow waiveDue {
    create(due: Due id) {
      let d = Dues.getById(due)
      d.waive()
    }
  }
  commandHandler Note(due: Due id) {
    let d = Dues.getById(due)
    d.note()
  }
}
"""


@pytest.fixture
async def app(
    database_url: str, tmp_path: Path
) -> AsyncIterator[tuple[ServiceClient, VirtualClock]]:
    model = tmp_path / "billing.loom"
    model.write_text(MODEL)
    clock = VirtualClock(start=datetime(2030, 1, 7, 9, 0, tzinfo=UTC))
    async with serve([model], database_url, clock=clock) as client:
        yield client, clock


async def test_internal_operations_have_no_route(
    app: tuple[ServiceClient, VirtualClock],
) -> None:
    c, _ = app
    due = (await c.post("/api/workflows/open", json={"amount": 5})).json()
    for op, body in (("settle", {"p": "x"}), ("lapse", {}), ("waive", {}), ("note", {})):
        r = await c.post(f"/api/dues/{due}/{op}", json=body)
        assert r.status_code in (404, 405), (op, r.text)
    paths = (await c.get("/openapi.json")).json()["paths"]
    assert not [p for p in paths if p.startswith("/api/dues/{id}/")], paths
    schemas = (await c.get("/openapi.json")).json()["components"]["schemas"]
    assert "DueSettleInput" not in schemas
    body = (await c.get(f"/api/dues/{due}")).json()
    assert body["paid"] is False and body["version"] == 1


async def test_the_context_runs_them(app: tuple[ServiceClient, VirtualClock]) -> None:
    c, clock = app
    due = (await c.post("/api/workflows/open", json={"amount": 5})).json()
    other = (await c.post("/api/workflows/open", json={"amount": 7})).json()

    # a command workflow raises the event, a reaction settles the due
    r = await c.post("/api/workflows/pay", json={"due": due, "payment": "pay-1"})
    assert r.status_code in (200, 204), r.text
    body = (await c.get(f"/api/dues/{due}")).json()
    assert body["paid"] is True and body["payment"] == "pay-1"

    # a command workflow and a command handler
    assert (await c.post("/api/workflows/waive_due", json={"due": other})).status_code in (200, 204)
    assert (await c.post("/api/commands/note", json={"due": other})).status_code in (200, 204)
    body = (await c.get(f"/api/dues/{other}")).json()
    assert body["waived"] is True and body["notes"] == 1

    # a timeout: the unpaid due lapses at its deadline, the paid one refuses (`when !paid`)
    await clock.advance(timedelta(hours=1, seconds=1))
    assert (await c.get(f"/api/dues/{other}")).json()["lapsed"] is True
    assert (await c.get(f"/api/dues/{due}")).json()["lapsed"] is False
