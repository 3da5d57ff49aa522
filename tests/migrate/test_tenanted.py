"""A context made `tenanted` on a real database, SQLite and PostgreSQL: the migration adds the
required `tenant` column and makes the unique key per tenant on an empty table, and refuses, in
words and changing nothing, a table with rows (their tenant cannot be invented)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import MetaData, insert, inspect, select

from loom.build.package import build_model, import_package
from loom.lang import compile_sources
from loom.migrate.database import apply
from loom.migrate.folder import MigrationsError
from loom.migrate.model import service_metadata
from tests.migrate.kit import run_on as _run
from tests.migrate.kit import write_versions

DATA = Path(__file__).parent / "data" / "tenanted-existing-table"
TABLE = "billing_invoices"


def _metadata(name: str, out: Path) -> MetaData:
    text = (DATA / f"{name}.loom").read_text(encoding="utf-8")
    result = compile_sources({f"{name}.loom": text})
    assert result.ok and result.model is not None
    build_model(result.model, out)
    return service_metadata(import_package(out))


@pytest.mark.parametrize("rows", [0, 1], ids=["empty", "with-rows"])
async def test_becoming_tenanted(database_url: str, tmp_path: Path, rows: int) -> None:
    before, after = _metadata("before", tmp_path / "v1"), _metadata("after", tmp_path / "v2")
    revs = write_versions(tmp_path / "migrations", before, after)
    assert (await apply(database_url, revs[:1])).applied == [revs[0].name]
    table = before.tables[TABLE]
    row = {"id": uuid.uuid4(), "version": 1, "number": "INV-1", "amount": 3}
    if rows:
        await _run(database_url, before, lambda c: c.execute(insert(table), row))
        with pytest.raises(MigrationsError, match="becomes tenanted and has rows"):
            await apply(database_url, revs)
        # nothing changed: no tenant column, the row as it was
        columns = await _run(
            database_url,
            before,
            lambda c: [col["name"] for col in inspect(c).get_columns(TABLE)],
        )
        assert "tenant" not in columns
        got = await _run(database_url, before, lambda c: c.execute(select(table)).all())
        assert [tuple(r) for r in got] == [tuple(row.values())]
        return
    assert (await apply(database_url, revs)).applied == [revs[1].name]
    # the key is per tenant now: the same number in two tenants, not twice in one
    t = after.tables[TABLE]
    make = {"version": 1, "number": "INV-1", "amount": 0}
    await _run(
        database_url,
        after,
        lambda c: c.execute(
            insert(t),
            [{**make, "id": uuid.uuid4(), "tenant": name} for name in ("acme", "globex")],
        ),
    )
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await _run(
            database_url,
            after,
            lambda c: c.execute(insert(t), {**make, "id": uuid.uuid4(), "tenant": "acme"}),
        )
    # and the tenant is required
    with pytest.raises(Exception, match=r"(?i)null"):
        await _run(
            database_url,
            after,
            lambda c: c.execute(insert(t), {**make, "id": uuid.uuid4(), "number": "INV-2"}),
        )
