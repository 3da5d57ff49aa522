"""What the generated tables carry for the migration engine (issue 11, the contract with
`loom.migrate`): `info["loom"]` on each table and each column of a model field, read from the
imported generated package."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from sqlalchemy import Table

from loom.codegen.python import generate
from loom.lang import compile_sources, render_text
from tests.codegen.util import import_generated, ruff, write_tree

MODEL = """
context Bank {
  enum Status { Active, Closed renamed from Shut }
  value Money { amount: decimal, currency: string }
  aggregate Client renamed from Customer with crudish {
    fullName: string renamed from name
    nickname: string immutable renamed from alias = ""
    status: Status = Active
    balance: decimal = 0.00
    debt: decimal = -1.5
    rank: int = -2
    tags: string[] = []
    fee: Money = Money { amount: 1.00, currency: "EUR" }
    at: datetime = now()
    old: Status?
  }
  event Joined { client: Client id, n: int = 0 }
  workflow Follow {
    client: Client id
    seen: int renamed from count
    total: decimal
    since: datetime?
    on(e: Joined) by e.client { seen := seen + 1 }
  }
  projection Totals {
    who: Client id renamed from customer
    total: int = 3
    on(e: Joined) by e.client { total := total + e.n }
  }
}
"""


def _tables(tmp_path: Path) -> dict[str, Table]:
    result = compile_sources({"bank.loom": MODEL})
    assert result.model is not None, render_text(result.diagnostics, result.sources)
    out = write_tree(generate(result.model), tmp_path / "bank")
    done = ruff("format", "--isolated", "--check", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    package = import_generated(out).__name__.rsplit(".", 1)[0]
    return dict(importlib.import_module(f"{package}._metadata").metadata.tables)


def _columns(table: Table) -> dict[str, Any]:
    return {c.name: c.info.get("loom") for c in table.columns}


def test_aggregate_table_and_columns(tmp_path: Path) -> None:
    table = _tables(tmp_path)["bank_clients"]
    assert table.info == {"loom": {"origin": "Bank.Client", "renamed_from": "bank_customers"}}
    assert list(table.info["loom"]) == ["origin", "renamed_from"]
    cols = _columns(table)
    assert cols["id"] is None and cols["version"] is None  # not model fields
    assert cols["full_name"] == {"field": "fullName", "renamed_from": "name"}
    assert list(cols["nickname"]) == ["field", "renamed_from", "default"]
    assert cols["nickname"] == {"field": "nickname", "renamed_from": "alias", "default": ""}
    assert cols["status"] == {
        "field": "status",
        "default": "Active",
        "enum_renamed": {"Shut": "Closed"},
        "enum": "Bank.Status",
        "members": ["Active", "Closed"],
    }
    assert cols["balance"]["default"] == "0.00"
    assert cols["debt"]["default"] == "-1.5"
    assert cols["rank"]["default"] == -2
    assert cols["tags"]["default"] == []
    assert cols["fee"]["default"] == {"amount": "1.00", "currency": "EUR"}
    assert cols["at"] == {"field": "at", "default_expr": "now()"}
    assert cols["old"] == {
        "field": "old",
        "enum_renamed": {"Shut": "Closed"},
        "enum": "Bank.Status",
        "members": ["Active", "Closed"],
    }


def test_instance_and_projection_tables(tmp_path: Path) -> None:
    tables = _tables(tmp_path)
    follow = tables["bank_follow_instances"]
    assert follow.info == {"loom": {"origin": "Bank.Follow"}}
    cols = _columns(follow)
    assert cols["client"] == {"field": "client"}
    # a state field without a default holds its type's zero value in every instance row
    assert cols["seen"] == {"field": "seen", "renamed_from": "count", "default": 0}
    assert cols["total"] == {"field": "total", "default": "0"}
    assert cols["since"] == {"field": "since"}
    totals = tables["bank_totals_rows"]
    assert totals.info == {"loom": {"origin": "Bank.Totals"}}
    assert _columns(totals) == {
        "who": {"field": "who", "renamed_from": "customer"},
        "version": None,
        "total": {"field": "total", "default": 3},
    }
