"""Hand-built schemas with the `info` the generated tables carry (the contract with the code
generator, docs/migrations.md#what-the-generated-tables-say), and a migrations folder written
from them the way `loom migrate new` writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Boolean, Column, Integer, MetaData, String, Table, Uuid

from loom.migrate.folder import Revision, revisions
from loom.migrate.plan import Plan, make_plan, write_revision
from loom.migrate.snapshot import Snapshot, empty, snapshot_of
from loom.runtime.types import DecimalText, JsonList


def info(**loom: Any) -> dict[str, Any]:
    return {"loom": loom}


def accounts(version: int) -> MetaData:
    """Versions of a `Bank.Account` aggregate's table (and, from 3, a `Bank.Loan`):
    1. number, balance, kind
    2. + nickname: string = "" ; + note: string? ; + limit: decimal = "0.00" ; + flags: [] ;
       + vip: bool = false
    3. number renamed to code; kind's member Basic renamed to Standard; + table loans
    4. note dropped; table accounts renamed to bank_wallets (aggregate renamed)
    """
    md = MetaData()
    table_name = "bank_wallets" if version >= 4 else "bank_accounts"
    table_info = info(origin="Bank.Account")
    if version >= 4:
        table_info = info(origin="Bank.Wallet", renamed_from="bank_accounts")
    cols: list[Column[Any]] = [
        Column("id", Uuid, primary_key=True),
        Column("version", Integer, nullable=False),
    ]
    if version >= 3:
        cols.append(
            Column("code", String, nullable=False, info=info(field="code", renamed_from="number"))
        )
    else:
        cols.append(Column("number", String, nullable=False, info=info(field="number")))
    cols.append(Column("balance", BigInteger, nullable=False, info=info(field="balance")))
    kind_info = info(field="kind", default="Basic")
    if version >= 3:
        kind_info = info(field="kind", default="Standard", enum_renamed={"Basic": "Standard"})
    cols.append(Column("kind", String, nullable=False, info=kind_info))
    if version >= 2:
        cols += [
            Column("nickname", String, nullable=False, info=info(field="nickname", default="")),
            Column("limit_", DecimalText, nullable=False, info=info(field="limit", default="0.00")),
            Column("flags", JsonList, nullable=False, info=info(field="flags", default=[])),
            Column("vip", Boolean, nullable=False, info=info(field="vip", default=False)),
        ]
    if 2 <= version < 4:
        cols.append(Column("note", String, nullable=True, info=info(field="note")))
    Table(table_name, md, *cols, info=table_info)
    if version >= 3:
        Table(
            "bank_loans",
            md,
            Column("id", Uuid, primary_key=True),
            Column("version", Integer, nullable=False),
            Column("amount", BigInteger, nullable=False, info=info(field="amount")),
            info=info(origin="Bank.Loan"),
        )
    return md


def plan_between(old: MetaData | None, new: MetaData) -> Plan:
    before = snapshot_of(old) if old is not None else empty()
    return make_plan(before, snapshot_of(new), fallback_file="bank.loom")


def write_versions(folder: Path, *versions: MetaData) -> list[Revision]:
    """The migrations from nothing to each of `versions` in turn, written into `folder`."""
    previous: Snapshot = empty()
    for n, md in enumerate(versions, start=1):
        current = snapshot_of(md)
        plan = make_plan(previous, current, fallback_file="bank.loom")
        write_revision(folder, revisions(folder), f"version {n}", plan, current)
        previous = current
    return revisions(folder)
