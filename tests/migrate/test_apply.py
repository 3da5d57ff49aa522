"""Applying migrations to a real database, SQLite and PostgreSQL: each version's rows read back
under the next version's tables, value for value; idempotent; a baseline for a database made by
create-all; a refusal for one that matches no snapshot, leaving it as it was."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import MetaData, insert, inspect, select
from sqlalchemy.exc import IntegrityError

from loom.migrate.database import VERSION_TABLE, apply, status
from loom.migrate.folder import MigrationsError
from tests.migrate.kit import accounts, altered, write_versions
from tests.migrate.kit import run_on as _run

ID = uuid.UUID("0190f000-0000-7000-8000-000000000001")
ID2 = uuid.UUID("0190f000-0000-7000-8000-000000000002")
ID3 = uuid.UUID("0190f000-0000-7000-8000-000000000003")


async def _rows(url: str, metadata: MetaData, table: str) -> list[dict[str, object]]:
    t = metadata.tables[table]
    return await _run(url, metadata, lambda c: [dict(r._mapping) for r in c.execute(select(t))])


async def test_versions_keep_every_value(database_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "migrations"
    revs = write_versions(folder, *(accounts(v) for v in (1, 2, 3, 4)))

    # version 1 from nothing, one row written under it
    done = await apply(database_url, revs[:1])
    assert done.applied == ["0001_version_1"]
    v1 = accounts(1)
    row = {"id": ID, "version": 1, "number": "A-1", "balance": 70, "kind": "Basic"}
    await _run(database_url, v1, lambda c: c.execute(insert(v1.tables["bank_accounts"]), row))

    # 2: the new fields get their defaults in the existing row
    assert (await apply(database_url, revs[:2])).applied == ["0002_version_2"]
    v2 = accounts(2)
    [got] = await _rows(database_url, v2, "bank_accounts")
    assert got == {
        **row,
        "nickname": "",
        "limit_": Decimal("0.00"),
        "flags": [],
        "vip": False,
        "note": None,
    }

    # 3: a renamed column keeps its values, a renamed enum member is rewritten
    assert (await apply(database_url, revs[:3])).applied == ["0003_version_3"]
    [got] = await _rows(database_url, accounts(3), "bank_accounts")
    assert (got["code"], got["kind"], got["balance"]) == ("A-1", "Standard", 70)

    # 4: the renamed table keeps its rows; the dropped column is gone
    assert (await apply(database_url, revs)).applied == ["0004_version_4"]
    [got] = await _rows(database_url, accounts(4), "bank_wallets")
    assert (got["code"], got["nickname"], got["balance"]) == ("A-1", "", 70)
    assert "note" not in got

    # a second run is a no-op, and the status says so
    again = await apply(database_url, revs)
    assert again.applied == [] and again.baselined == []
    state = await status(database_url, revs)
    assert (state.applied, state.pending, state.drift) == (
        [r.name for r in revs],
        [],
        [],
    )


async def test_status_reports_drift(database_url: str, tmp_path: Path) -> None:
    revs = write_versions(tmp_path / "migrations", accounts(1))
    await apply(database_url, revs)
    await _run(
        database_url,
        MetaData(),
        lambda c: c.exec_driver_sql("ALTER TABLE bank_accounts ADD COLUMN extra VARCHAR(10)"),
    )
    state = await status(database_url, revs)
    assert state.drift == ["column bank_accounts.extra is in the database, not in the model"]
    assert state.changed == []
    revs[0].script.write_text(revs[0].script.read_text() + "    # edited\n")
    assert (await status(database_url, revs)).changed == ["0001_version_1"]


async def test_a_create_all_database_is_a_baseline(database_url: str, tmp_path: Path) -> None:
    revs = write_versions(tmp_path / "migrations", accounts(1), accounts(2))
    v1 = accounts(1)
    await _run(database_url, v1, v1.create_all)  # what `loom run` did before migrations
    before = await status(database_url, revs)
    assert before.unrecorded_tables and before.applied == []
    done = await apply(database_url, revs)
    assert (done.baselined, done.applied) == (["0001_version_1"], ["0002_version_2"])
    state = await status(database_url, revs)
    assert state.baselined == ["0001_version_1"] and not state.pending and not state.drift


async def test_a_partial_match_is_refused_and_left_alone(database_url: str, tmp_path: Path) -> None:
    revs = write_versions(tmp_path / "migrations", accounts(2))
    v1 = accounts(1)
    await _run(database_url, v1, v1.create_all)  # matches no snapshot: v2's columns are missing
    with pytest.raises(MigrationsError) as refused:
        await apply(database_url, revs)
    assert "column bank_accounts.nickname is missing" in str(refused.value)
    tables = await _run(database_url, MetaData(), lambda c: set(inspect(c).get_table_names()))
    assert VERSION_TABLE not in tables  # rolled back whole


async def test_a_failing_migration_applies_nothing(database_url: str, tmp_path: Path) -> None:
    revs = write_versions(tmp_path / "migrations", accounts(1), accounts(2))
    await apply(database_url, revs[:1])
    broken = revs[1].script
    broken.write_text(broken.read_text() + "    op.execute('SELECT * FROM no_such_table')\n")
    with pytest.raises(MigrationsError, match="migration 0002_version_2 failed"):
        await apply(database_url, revs)
    state = await status(database_url, revs)
    assert state.applied == ["0001_version_1"] and [r.name for r in state.pending] == [
        "0002_version_2"
    ]
    assert state.drift == []  # the added columns were rolled back with it


async def test_column_changes_keys_and_indexes(database_url: str, tmp_path: Path) -> None:
    v1, v2, v3 = (altered(n) for n in (1, 2, 3))
    revs = write_versions(tmp_path / "migrations", v1, v2, v3)
    await apply(database_url, revs[:1])
    t1 = v1.tables["t"]
    await _run(
        database_url,
        v1,
        lambda c: c.execute(
            insert(t1), [{"id": ID, "n": 1, "s": None}, {"id": ID2, "n": 2, "s": "x"}]
        ),
    )
    assert (await apply(database_url, revs[:2])).applied == ["0002_version_2"]
    rows = sorted((r["n"], r["s"]) for r in await _rows(database_url, v2, "t"))
    assert rows == [(1, "none"), (2, "x")]  # the empty value got the default first
    # the unique key holds
    t2 = v2.tables["t"]
    with pytest.raises(IntegrityError):
        await _run(database_url, v2, lambda c: c.execute(insert(t2), {"id": ID3, "n": 1, "s": "y"}))
    assert (await apply(database_url, revs)).applied == ["0003_version_3"]
    t3 = v3.tables["t"]
    await _run(database_url, v3, lambda c: c.execute(insert(t3), {"id": ID3, "n": 1, "s": None}))
    state = await status(database_url, revs)
    assert not state.pending and not state.drift
