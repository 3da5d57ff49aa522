"""A `string(N)` made shorter, on SQLite and PostgreSQL: the step is linted as narrowing, and its
revision checks the stored values first (`guards.strings_fit`), as a narrower `decimal(P, S)`
does: a value longer than the new bound stops the revision before the change, naming it, and
every row keeps its value; values that fit are applied and kept."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, Uuid, insert, select

from loom.migrate.database import apply
from loom.migrate.folder import MigrationsError
from tests.migrate.kit import info, plan_between, write_versions
from tests.migrate.test_apply import _run


def customers(name: Any) -> MetaData:
    md = MetaData()
    Table(
        "crm_customers",
        md,
        Column("id", Uuid, primary_key=True),
        Column("version", Integer, nullable=False),
        Column("name", name, nullable=False, info=info(field="name")),
        info=info(origin="Crm.Customer"),
    )
    return md


def rows(*names: str) -> list[dict[str, Any]]:
    return [{"id": uuid.uuid4(), "version": 1, "name": n} for n in names]


@pytest.mark.parametrize(
    ("old", "new", "narrowing", "guarded"),
    [
        (String(40), String(20), True, True),
        (String(), String(20), True, True),  # a plain string may be longer
        (String(20), String(40), False, False),
        (String(20), String(), False, False),
    ],
)
def test_a_shorter_bound_is_linted_and_guarded(
    old: Any, new: Any, narrowing: bool, guarded: bool, tmp_path: Path
) -> None:
    plan = plan_between(customers(old), customers(new))
    codes = {f.diagnostic.code for f in plan.findings}
    assert ("loom.migrate-narrowing-type" in codes) is narrowing, plan.render({})
    script = write_versions(tmp_path / "m", customers(old), customers(new))[-1].script.read_text()
    assert ('guards.strings_fit("crm_customers", "name", 20)' in script) is guarded, script


async def test_a_longer_stored_value_stops_the_revision(database_url: str, tmp_path: Path) -> None:
    old, new = customers(String(40)), customers(String(8))
    revs = write_versions(tmp_path / "m", old, new)
    await apply(database_url, revs[:1])
    # "Zoë Åberg" is 9 characters (and more bytes): counted in characters, as string(N) counts
    stored = rows("Ann", "Annabelle Lee", "Zoë Åberg", "Bo")
    await _run(database_url, old, lambda c: c.execute(insert(old.tables["crm_customers"]), stored))

    refused = r"crm_customers.name becomes string\(8\), but 2 stored value\(s\) are longer"
    with pytest.raises(MigrationsError, match=refused) as err:
        await apply(database_url, revs)
    assert "'Annabelle Lee', 'Zoë Åberg'" in str(err.value)
    table = old.tables["crm_customers"]
    got = await _run(database_url, old, lambda c: list(c.execute(select(table.c.name)).scalars()))
    assert sorted(got) == ["Ann", "Annabelle Lee", "Bo", "Zoë Åberg"]


async def test_values_that_fit_are_applied_and_kept(database_url: str, tmp_path: Path) -> None:
    old, new = customers(String(40)), customers(String(9))
    revs = write_versions(tmp_path / "m", old, new)
    await apply(database_url, revs[:1])
    stored = rows("Ann", "Zoë Åberg")  # exactly 9 characters fits string(9)
    await _run(database_url, old, lambda c: c.execute(insert(old.tables["crm_customers"]), stored))
    assert (await apply(database_url, revs)).applied == [revs[-1].name]
    table = new.tables["crm_customers"]
    got = await _run(database_url, new, lambda c: list(c.execute(select(table.c.name)).scalars()))
    assert sorted(got) == ["Ann", "Zoë Åberg"]
