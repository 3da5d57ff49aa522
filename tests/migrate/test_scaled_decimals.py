"""A `decimal(P, S)` field added to an existing aggregate (`DecimalText(10, 2)`), on SQLite and
PostgreSQL: the migration adds the column with its default for the existing rows, and the column
then stores values padded to the scale and refuses one that does not fit."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, Uuid, insert, select
from sqlalchemy.exc import StatementError

from loom.migrate.database import apply
from loom.runtime import Service
from loom.runtime.types import DecimalText
from tests.migrate.kit import info, write_versions

ID = uuid.UUID("0190f000-0000-7000-8000-000000000001")
ID2 = uuid.UUID("0190f000-0000-7000-8000-000000000002")


def plans(version: int) -> MetaData:
    """1. price: decimal ; 2. + fee: decimal(10, 2) = 0.00"""
    md = MetaData()
    cols: list[Column[Any]] = [
        Column("id", Uuid, primary_key=True),
        Column("version", Integer, nullable=False),
        Column("price", DecimalText, nullable=False, info=info(field="price")),
    ]
    if version >= 2:
        fee = info(field="fee", default="0.00")
        cols.append(Column("fee", DecimalText(10, 2), nullable=False, info=fee))
    Table("billing_plans", md, *cols, info=info(origin="Billing.Plan"))
    return md


async def _run(url: str, metadata: MetaData, action: Any) -> Any:
    service = Service.from_url(url, metadata)
    try:
        async with service.engine.begin() as conn:
            return await conn.run_sync(action)
    finally:
        await service.dispose()


async def test_adding_a_decimal_p_s_field(database_url: str, tmp_path: Path) -> None:
    revs = write_versions(tmp_path / "migrations", plans(1), plans(2))
    await apply(database_url, revs[:1])
    v1, v2 = plans(1), plans(2)
    row = {"id": ID, "version": 1, "price": Decimal("14.5")}
    await _run(database_url, v1, lambda c: c.execute(insert(v1.tables["billing_plans"]), row))

    assert (await apply(database_url, revs)).applied == ["0002_version_2"]
    table = v2.tables["billing_plans"]
    new = {"id": ID2, "version": 1, "price": Decimal(1), "fee": Decimal("12.5")}
    await _run(database_url, v2, lambda c: c.execute(insert(table), new))
    rows = await _run(
        database_url, v2, lambda c: [tuple(r) for r in c.execute(select(table.c.id, table.c.fee))]
    )
    assert sorted((str(i), str(fee)) for i, fee in rows) == [(str(ID), "0.00"), (str(ID2), "12.50")]

    bad = {"id": uuid.uuid4(), "version": 1, "price": Decimal(1), "fee": Decimal("12.345")}
    with pytest.raises(StatementError, match="at most 2 digits after the point"):
        await _run(database_url, v2, lambda c: c.execute(insert(table), bad))
