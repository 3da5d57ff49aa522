"""The SQLite driver: one trip to aiosqlite's thread per statement, and every answer SQLAlchemy
reads from a cursor as the stock adapter gives it (rows, row counts, last row ids, errors,
streamed results)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select, text, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.runtime.storage.engine import create_engine
from loom.runtime.storage.sqlite_driver import OneTripDBAPI

metadata = MetaData()
items = Table(
    "items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String, unique=True, nullable=False),
    Column("n", Integer, nullable=False),
)


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite:///{tmp_path / 'driver.db'}")
    async with engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    yield engine
    await engine.dispose()


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The calls queued to aiosqlite's thread, by the name of the function run there."""
    seen: list[str] = []
    queue: Callable[..., Awaitable[Any]] = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Callable[..., Any], *a: Any, **k: Any) -> Any:
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await queue(self, fn, *a, **k)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return seen


async def test_the_engine_of_a_sqlite_url_uses_the_one_trip_driver(engine: AsyncEngine) -> None:
    assert isinstance(engine.dialect.loaded_dbapi, OneTripDBAPI)


async def test_each_statement_is_one_trip(engine: AsyncEngine, trips: list[str]) -> None:
    async with engine.connect() as conn:
        await conn.execute(text("SELECT 1"))  # the connection's first use: BEGIN and the like
        trips.clear()
        await conn.execute(insert(items), {"name": "a", "n": 1})
        rows = (await conn.execute(select(items.c.name, items.c.n))).all()
        changed = await conn.execute(update(items).values(n=2).where(items.c.name == "a"))
        statements = list(trips)
    assert rows == [("a", 1)]
    assert changed.rowcount == 1
    print("trips for an INSERT, a SELECT and an UPDATE:", statements)
    assert statements == ["_run", "_run", "_run"]


async def test_answers_are_those_of_sqlite(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        first = await conn.execute(insert(items), {"name": "a", "n": 1})
        assert first.inserted_primary_key == (1,)
        many = await conn.execute(insert(items), [{"name": f"m{i}", "n": i} for i in range(5)])
        assert many.rowcount == 5
        none = await conn.execute(update(items).values(n=0).where(items.c.name == "nobody"))
        assert none.rowcount == 0
        result = await conn.execute(select(items).order_by(items.c.id))
        assert list(result.keys()) == ["id", "name", "n"]
        assert [r.name for r in result] == ["a", "m0", "m1", "m2", "m3", "m4"]
        empty = await conn.execute(select(items).where(items.c.id < 0))
        assert empty.first() is None


async def test_errors_are_sqlalchemys(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        await conn.execute(insert(items), {"name": "a", "n": 1})
        with pytest.raises(IntegrityError):
            await conn.execute(insert(items), {"name": "a", "n": 2})
        await conn.rollback()
        with pytest.raises(OperationalError, match="no such table"):
            await conn.execute(text("SELECT * FROM nowhere"))


async def test_a_stream_still_fetches_in_batches(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(insert(items), [{"name": f"s{i}", "n": i} for i in range(250)])
    async with engine.connect() as conn:
        streamed = await conn.stream(select(items.c.n).order_by(items.c.n))
        seen = [row.n async for row in streamed]
    assert seen == list(range(250))
