"""Hand-built schemas with the `info` the generated tables carry (the contract with the code
generator, docs/migrations.md#what-the-generated-tables-say), and a migrations folder written
from them the way `loom migrate new` writes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    Uuid,
)

from loom.migrate.folder import Revision, revisions
from loom.migrate.plan import Plan, make_plan, write_revision
from loom.migrate.snapshot import Snapshot, empty
from loom.migrate.tables import snapshot_of
from loom.runtime import Service
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


def altered(version: int) -> MetaData:
    """Versions of one table `t` whose columns change in place:
    1. n: Integer, s: String(10)?
    2. n widened to BigInteger, unique and indexed; s: String(20) required, default "none"
    3. s optional again; the key and the index dropped
    """
    md = MetaData()
    cols: list[Any] = [Column("id", Uuid, primary_key=True)]
    if version == 1:
        cols += [Column("n", Integer, nullable=False), Column("s", String(10), nullable=True)]
    else:
        required = version == 2
        s_info = info(field="s", default="none") if required else info(field="s")
        cols += [
            Column("n", BigInteger, nullable=False, info=info(field="n")),
            Column("s", String(20), nullable=not required, info=s_info),
        ]
    if version == 2:
        cols += [UniqueConstraint("n", name="uq_t_n"), Index("ix_t_n", "n")]
    Table("t", md, *cols, info=info(origin="C.T"))
    return md


def plan_between(old: MetaData | None, new: MetaData) -> Plan:
    before = snapshot_of(old) if old is not None else empty()
    return make_plan(before, snapshot_of(new), fallback_file="bank.loom")


T = TypeVar("T")


async def run_on(url: str, metadata: MetaData, action: Callable[[Connection], T]) -> T:
    """`action(connection)` in one transaction on the database at `url`."""
    service = Service.from_url(url, metadata)
    try:
        async with service.engine.begin() as conn:
            return await conn.run_sync(action)
    finally:
        await service.dispose()


def write_versions(folder: Path, *versions: MetaData) -> list[Revision]:
    """The migrations from nothing to each of `versions` in turn, written into `folder`."""
    previous: Snapshot = empty()
    for n, md in enumerate(versions, start=1):
        current = snapshot_of(md)
        plan = make_plan(previous, current, fallback_file="bank.loom")
        write_revision(folder, revisions(folder), f"version {n}", plan, current)
        previous = current
    return revisions(folder)
