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
