"""Events in flight across a migration (issue 11 §4, §6), through the real path on SQLite and
PostgreSQL: the old model's service writes durable events and stops before its relay delivers
them; then, with the new model in the same file, `loom migrate new --database-url`:

- refuses a change that leaves them undecodable (the event type removed; a field added with no
  default), naming how many are stored, and writes nothing; once the old version has delivered
  them, writes the migration;
- writes a change whose new field has a default (the upcast), and after `loom migrate apply` the
  new version delivers the pending events with the default in their place.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import column, select, table, update

from loom.cli.main import app
from loom.testing import ServiceClient, serve

OUTBOX = table("__loom_outbox", column("event_type"), column("status"))
OUTBOX_ID = table("__loom_outbox", column("event_id"), column("status"))

V1 = """
context Bank {
  aggregate Account with crudish {
    balance: int = 0
    operation deposit(amount: int) {
      balance += amount
      emit Credited { account: id, amount: amount }
    }
  }
  repository Accounts for Account {}
  event Credited { account: Account id, amount: int }
  channel Ledger { carries: Credited }
  projection Totals {
    account: Account id
    source: string = ""
    total: int = 0
    on(e: Credited) by e.account { total := total + e.amount }
  }
}
"""
NOTE = "    balance: int = 0\n"
# every version 2 adds a field to the aggregate, so that the migration has a step
_V2 = V1.replace(NOTE, NOTE + "    note: string?\n")
REQUIRED = _V2.replace("amount: int }", "amount: int, source: string }").replace(
    "amount: amount }", 'amount: amount, source: "branch" }'
)
DEFAULTED = _V2.replace("amount: int }", 'amount: int, source: string = "web" }').replace(
    "{ total := total + e.amount }",
    "{\n      source := e.source\n      total := total + e.amount\n    }",
)
REMOVED = _V2.replace("Credited", "Deposited")  # no `renamed from`: Bank.Credited is gone


def _cli(*args: str | Path) -> tuple[int, str]:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    return r.exit_code, r.output


async def _ok(c: ServiceClient, method: str, path: str, body: Any = None) -> Any:
    r = await c.request(method, path, json=body)
    assert r.status_code < 300, r.text
    return r.json() if r.content else None


async def _outbox(c: ServiceClient) -> list[tuple[str, str]]:
    async with c.service.engine.connect() as conn:
        rows = await conn.execute(select(OUTBOX.c.event_type, OUTBOX.c.status))
        return sorted((r.event_type, r.status) for r in rows)


async def _write_pending(model: Path, url: str) -> str:
    """Two deposits whose events stay pending (the relay stopped first)."""
    async with serve([model], url, settle=False) as old:
        await old.service.stop_relay()
        account = str((await _ok(old, "POST", "/api/accounts", {}))["id"])
        await _ok(old, "POST", f"/api/accounts/{account}/deposit", {"amount": 5})
        await _ok(old, "POST", f"/api/accounts/{account}/deposit", {"amount": 7})
        assert await _outbox(old) == [("Bank.Credited", "pending")] * 2
        return account


async def _deliver(model: Path, url: str) -> None:
    async with serve([model], url) as old:
        await old.settle()
        assert await _outbox(old) == []  # a `work` channel deletes a delivered row


def _first_version(tmp_path: Path, url: str) -> Path:
    model = tmp_path / "bank" / "bank.loom"
    model.parent.mkdir()
    model.write_text(V1, encoding="utf-8")
    assert _cli("migrate", "new", model)[0] == 0
    assert _cli("migrate", "apply", model, "--database-url", url)[0] == 0
    return model


@pytest.mark.parametrize(
    ("new", "says"),
    [
        (REQUIRED, "has the field `source`, with no default"),
        (REMOVED, "event type Bank.Credited is no longer in the model"),
    ],
    ids=["required-field", "removed-type"],
)
def test_refused_while_stored_then_written_once_delivered(
    tmp_path: Path, database_url: str, new: str, says: str
) -> None:
    model = _first_version(tmp_path, database_url)
    asyncio.run(_write_pending(model, database_url))

    model.write_text(new, encoding="utf-8")
    code, out = _cli("migrate", "new", model, "--database-url", database_url)
    assert code == 1, out
    assert "error[loom.migrate-pending-events]" in out, out
    assert "2 stored events of Bank.Credited (2 pending) would not decode" in out, out
    assert says in out, out
    assert "stored events would not decode under the new model" in out
    assert not list((model.parent / "migrations").glob("0002_*"))

    model.write_text(V1, encoding="utf-8")
    asyncio.run(_deliver(model, database_url))
    model.write_text(new, encoding="utf-8")
    code, out = _cli("migrate", "new", model, "--database-url", database_url)
    assert code == 0, out
    assert says in out and "no stored event is affected" in out, out
    assert len(list((model.parent / "migrations").glob("0002_*.py"))) == 1


def test_a_pending_event_survives_a_defaulted_field_and_is_delivered(
    tmp_path: Path, database_url: str
) -> None:
    model = _first_version(tmp_path, database_url)
    account = asyncio.run(_write_pending(model, database_url))

    model.write_text(DEFAULTED, encoding="utf-8")
    code, out = _cli("migrate", "new", model, "--database-url", database_url)
    assert code == 0, out
    assert "pending-events" not in out, out
    assert _cli("migrate", "apply", model, "--database-url", database_url)[0] == 0

    async def deliver() -> None:
        async with serve([model], database_url, settle=False) as now:
            await now.service.stop_relay()  # the test drives the relay with settle()
            await now.settle()
            row = await _ok(now, "GET", f"/api/projections/totals/{account}")
            assert (row["source"], row["total"]) == ("web", 12)  # the default, in both
            assert await _outbox(now) == []

    asyncio.run(deliver())


def test_dead_letters_count(tmp_path: Path, database_url: str) -> None:
    model = _first_version(tmp_path, database_url)
    asyncio.run(_write_pending(model, database_url))

    async def dead_letter_one() -> None:  # as the relay does at max_attempts
        async with serve([model], database_url, settle=False) as old:
            await old.service.stop_relay()
            async with old.service.engine.begin() as conn:
                first = (await conn.execute(select(OUTBOX_ID.c.event_id).limit(1))).scalar_one()
                await conn.execute(
                    update(OUTBOX_ID).where(OUTBOX_ID.c.event_id == first).values(status="dead")
                )

    asyncio.run(dead_letter_one())
    model.write_text(REMOVED, encoding="utf-8")
    code, out = _cli("migrate", "new", model, "--database-url", database_url)
    assert code == 1, out
    assert "2 stored events of Bank.Credited (1 dead-lettered, 1 pending)" in out, out


def test_the_check_is_skipped_when_the_database_cannot_be_reached(tmp_path: Path) -> None:
    model = tmp_path / "bank" / "bank.loom"
    model.parent.mkdir()
    model.write_text(V1, encoding="utf-8")
    assert _cli("migrate", "new", model)[0] == 0
    model.write_text(REQUIRED, encoding="utf-8")
    url = "postgresql://nobody@127.0.0.1:1/none"
    code, out = _cli("migrate", "new", model, "--database-url", url)
    assert code == 0, out
    assert "the check of stored events was SKIPPED (cannot connect to the database" in out, out


def test_a_log_channel_keeps_delivered_events_which_count(
    tmp_path: Path, database_url: str
) -> None:
    """Delivered events a `log` channel retains are stored events too: removing their type is
    refused for as long as the log keeps them."""
    model = tmp_path / "bank" / "bank.loom"
    model.parent.mkdir()
    logged = V1.replace("{ carries: Credited }", "{ carries: Credited  retention: log }")
    model.write_text(logged, encoding="utf-8")
    assert _cli("migrate", "new", model)[0] == 0
    assert _cli("migrate", "apply", model, "--database-url", database_url)[0] == 0

    async def deposit_and_deliver() -> None:
        async with serve([model], database_url) as old:
            account = str((await _ok(old, "POST", "/api/accounts", {}))["id"])
            await _ok(old, "POST", f"/api/accounts/{account}/deposit", {"amount": 5})
            await old.settle()
            assert await _outbox(old) == [("Bank.Credited", "delivered")]

    asyncio.run(deposit_and_deliver())
    model.write_text(
        REMOVED.replace("{ carries: Deposited }", "{ carries: Deposited  retention: log }")
    )
    code, out = _cli("migrate", "new", model, "--database-url", database_url)
    assert code == 1, out
    assert "1 stored event of Bank.Credited (1 retained in a log) would not decode" in out, out
    assert "declare the event that replaces it `renamed from Credited`" in out
    # the upcast the model states: the new event is `renamed from` the stored type
    renamed = REMOVED.replace("event Deposited {", "event Deposited renamed from Credited {")
    model.write_text(
        renamed.replace("{ carries: Deposited }", "{ carries: Deposited  retention: log }")
    )
    code, out = _cli("migrate", "new", model, "--database-url", database_url)
    assert code == 0, out
    assert "pending-events" not in out
