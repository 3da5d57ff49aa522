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
from loom.migrate.folder import MigrationsError
from loom.runtime.types import DecimalText
from tests.migrate.kit import info, plan_between, write_versions
from tests.migrate.test_apply import _run

ID = uuid.UUID("0190f000-0000-7000-8000-000000000001")
ID2 = uuid.UUID("0190f000-0000-7000-8000-000000000002")


def plans(version: int, price: Any = DecimalText) -> MetaData:
    """1. price: decimal ; 2. + fee: decimal(10, 2) = 0.00 (`price` the type of price)"""
    md = MetaData()
    cols: list[Column[Any]] = [
        Column("id", Uuid, primary_key=True),
        Column("version", Integer, nullable=False),
        Column("price", price, nullable=False, info=info(field="price")),
    ]
    if version >= 2:
        fee = info(field="fee", default="0.00")
        cols.append(Column("fee", DecimalText(10, 2), nullable=False, info=fee))
    Table("billing_plans", md, *cols, info=info(origin="Billing.Plan"))
    return md


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


@pytest.mark.parametrize(
    ("old", "new", "narrowing"),
    [
        (DecimalText(), DecimalText(10, 2), True),  # a plain decimal may hold more digits
        (DecimalText(10, 2), DecimalText(10, 3), True),  # one digit fewer before the point
        (DecimalText(10, 2), DecimalText(9, 1), True),
        (DecimalText(10, 2), DecimalText(12, 3), False),
        (DecimalText(10, 2), DecimalText(), False),
    ],
)
def test_a_change_of_precision_or_scale_is_a_step(old: Any, new: Any, narrowing: bool) -> None:
    plan = plan_between(plans(2, old), plans(2, new))
    [line] = plan.lines()
    assert line.startswith("change the type of billing_plans.price from Decimal")
    codes = {f.diagnostic.code for f in plan.findings}
    assert ("loom.migrate-narrowing-type" in codes) is narrowing, plan.render({})


async def test_the_step_sets_numeric_p_s(database_url: str, tmp_path: Path) -> None:
    revs = write_versions(tmp_path / "m", plans(2), plans(2, DecimalText(12, 2)))
    script = revs[-1].script.read_text()
    assert "type_=types.DecimalText(12, 2)" in script
    assert "::numeric(12,2)" in script
    await apply(database_url, revs)
    v = plans(2, DecimalText(12, 2))
    row = {"id": ID, "version": 1, "price": Decimal("1234567890.5"), "fee": 0}
    await _run(database_url, v, lambda c: c.execute(insert(v.tables["billing_plans"]), row))
    got = await _run(
        database_url, v, lambda c: c.execute(select(v.tables["billing_plans"].c.price)).scalar()
    )
    assert str(got) == "1234567890.50"


@pytest.mark.parametrize("stored", ["12.345", "123456789.5"])
async def test_narrowing_refuses_a_stored_value_that_does_not_fit(
    database_url: str, tmp_path: Path, stored: str
) -> None:
    """decimal(12, 3) → decimal(10, 2) with a stored 12.345 (one digit too many after the point:
    PostgreSQL's ALTER would round it to 12.35) or 123456789.5 (too many before it): the revision
    stops before the change, says which values, and every row keeps its value."""
    old, new = plans(2, DecimalText(12, 3)), plans(2, DecimalText(10, 2))
    revs = write_versions(tmp_path / "m", old, new)
    script = revs[-1].script.read_text()
    assert 'guards.decimals_fit("billing_plans", "price", 10, 2)' in script
    assert "from loom.migrate import guards" in script
    await apply(database_url, revs[:1])
    rows = [
        {"id": ID, "version": 1, "price": Decimal("1.5"), "fee": 0},
        {"id": ID2, "version": 1, "price": Decimal(stored), "fee": 0},
    ]
    await _run(database_url, old, lambda c: c.execute(insert(old.tables["billing_plans"]), rows))

    with pytest.raises(MigrationsError, match=rf"1 stored value\(s\) do not fit it \({stored}"):
        await apply(database_url, revs)
    table = old.tables["billing_plans"]
    got = await _run(database_url, old, lambda c: list(c.execute(select(table.c.price)).scalars()))
    assert sorted(got) == sorted([Decimal("1.5"), Decimal(stored)])


async def test_narrowing_applies_when_every_value_fits(database_url: str, tmp_path: Path) -> None:
    """The same change with stored values that the new type holds (12.340 is 12.34): applied, and
    the values read back unchanged (SQLite keeps the stored text, 12.340; the wire writes every
    value at the field's scale)."""
    old, new = plans(2, DecimalText(12, 3)), plans(2, DecimalText(10, 2))
    revs = write_versions(tmp_path / "m", old, new)
    await apply(database_url, revs[:1])
    row = {"id": ID, "version": 1, "price": Decimal("12.34"), "fee": 0}
    await _run(database_url, old, lambda c: c.execute(insert(old.tables["billing_plans"]), row))
    assert (await apply(database_url, revs)).applied == [revs[-1].name]
    table = new.tables["billing_plans"]
    got = await _run(database_url, new, lambda c: c.execute(select(table.c.price)).scalar())
    assert got == Decimal("12.34")
