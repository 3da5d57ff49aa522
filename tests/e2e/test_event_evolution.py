"""Events written by the previous model are delivered under the new one (issue 11 §4), over HTTP
on SQLite and PostgreSQL: the old model's service writes durable events to the outbox and stops
before the relay delivers them; the new model's service, on the same database, delivers them:

- an event type renamed with `renamed from` is still routed to its reactions by its old name;
- a field renamed with `renamed from` is read from its old key;
- a field added with a default gets the default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import column, select, table

from loom.testing import ServiceClient, serve

OUTBOX = table("__loom_outbox", column("event_type"), column("status"))

# Both versions keep the same tables (the projection's row has every column either one writes):
# what changes is only the events.
OLD = """
context Bank {
  aggregate Account with crudish {
    balance: int = 0
    operation deposit(amount: int) {
      balance += amount
      emit Credited { account: id, holder: "ann", amount: amount }
    }
  }
  repository Accounts for Account {}
  event Credited { account: Account id, holder: string, amount: int }
  channel Ledger { carries: Credited  retention: log }
  projection Totals {
    account: Account id
    owner: string = ""
    source: string = ""
    total: int = 0
    on(e: Credited) by e.account {
      owner := e.holder
      total := total + e.amount
    }
  }
}
"""

NEW = """
context Bank {
  aggregate Account with crudish {
    balance: int = 0
    operation deposit(amount: int) {
      balance += amount
      emit Deposited { account: id, owner: "bob", amount: amount, source: "branch" }
    }
  }
  repository Accounts for Account {}
  event Deposited renamed from Credited {
    account: Account id
    owner: string renamed from holder
    amount: int
    source: string = "web"
  }
  channel Ledger { carries: Deposited  retention: log }
  projection Totals {
    account: Account id
    owner: string = ""
    source: string = ""
    total: int = 0
    on(e: Deposited) by e.account {
      owner := e.owner
      source := e.source
      total := total + e.amount
    }
  }
}
"""


def model(tmp_path: Path, name: str, text: str) -> list[Path]:
    path = tmp_path / name / "bank.loom"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    return [path]


async def outbox(c: ServiceClient) -> list[tuple[str, str]]:
    async with c.service.engine.connect() as conn:
        rows = await conn.execute(select(OUTBOX.c.event_type, OUTBOX.c.status))
        return sorted((r.event_type, r.status) for r in rows)


async def ok(c: ServiceClient, method: str, path: str, body: Any = None) -> Any:
    r = await c.request(method, path, json=body)
    assert r.status_code < 300, r.text
    return r.json() if r.content else None


async def test_stored_events_decode_under_the_new_model(tmp_path: Path, database_url: str) -> None:
    async with serve(model(tmp_path, "old", OLD), database_url, settle=False) as old:
        await old.service.stop_relay()  # the old version stops before delivering
        account = (await ok(old, "POST", "/api/accounts", {}))["id"]
        await ok(old, "POST", f"/api/accounts/{account}/deposit", {"amount": 5})
        await ok(old, "POST", f"/api/accounts/{account}/deposit", {"amount": 7})
        assert await outbox(old) == [("Bank.Credited", "pending")] * 2

    async with serve(model(tmp_path, "new", NEW), database_url, settle=False) as new:
        await new.service.stop_relay()  # the test drives the relay with settle()
        await new.settle()
        row = await ok(new, "GET", f"/api/projections/totals/{account}")
        # routed by the old type, `holder` read as `owner`, `source` defaulted
        assert (row["owner"], row["source"], row["total"]) == ("ann", "web", 12)
        assert await outbox(new) == [("Bank.Credited", "delivered")] * 2
        # an event the new version writes has the new type, fields and values
        await ok(new, "POST", f"/api/accounts/{account}/deposit", {"amount": 1})
        await new.settle()
        row = await ok(new, "GET", f"/api/projections/totals/{account}")
        assert (row["owner"], row["source"], row["total"]) == ("bob", "branch", 13)
        types = [t for t, _ in await outbox(new)]
        assert types == ["Bank.Credited", "Bank.Credited", "Bank.Deposited"]
