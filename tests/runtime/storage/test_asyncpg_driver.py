"""The asyncpg driver: a statement's prepared statement found without the adapter's extra
coroutines, and every answer SQLAlchemy reads from a cursor as the stock adapter gives it (rows,
descriptions, row counts, errors), on a real PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import (
    Column,
    Integer,
    MetaData,
    String,
    Table,
    delete,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError, ProgrammingError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from loom.runtime.storage.asyncpg_driver import LeanDBAPI, _LeanConnection, rowcount_of
from loom.runtime.storage.engine import create_engine

pytestmark = pytest.mark.postgres

metadata = MetaData()
items = Table(
    "items",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String, unique=True, nullable=False),
    Column("n", Integer, nullable=False),
)
BY_N = select(items.c.id, items.c.name).where(items.c.n >= 0).order_by(items.c.id)


@pytest.fixture
async def engines(postgres_url: str) -> AsyncIterator[tuple[AsyncEngine, AsyncEngine]]:
    """Loom's engine and SQLAlchemy's stock one, on the same database."""
    lean = create_engine(postgres_url)
    stock = create_async_engine(postgres_url)
    async with stock.begin() as conn:
        await conn.run_sync(metadata.create_all)
    yield lean, stock
    await lean.dispose()
    await stock.dispose()


async def _session(engine: AsyncEngine, prefix: str) -> list[Any]:
    """What SQLAlchemy reads of one session of statements."""
    seen: list[Any] = []
    async with engine.begin() as conn:
        r = await conn.execute(insert(items), [{"name": f"{prefix}{i}", "n": i} for i in range(3)])
        seen.append(("insert many", r.rowcount))
        r = await conn.execute(insert(items).values(name=f"{prefix}x", n=9))
        seen.append(("insert one", r.rowcount))
        for _ in range(2):  # the second run takes the cache hit
            r = await conn.execute(BY_N.where(items.c.name.like(f"{prefix}%")))
            seen.append(("select", list(r.keys()), [row.name for row in r]))
        where = items.c.name.like(f"{prefix}%")
        r = await conn.execute(update(items).where(where, items.c.n < 2).values(n=items.c.n + 1))
        seen.append(("update", r.rowcount))
        r = await conn.execute(update(items).where(items.c.name == "nobody").values(n=0))
        seen.append(("update none", r.rowcount))
        r = await conn.execute(delete(items).where(items.c.name == f"{prefix}x"))
        seen.append(("delete", r.rowcount))
        r = await conn.execute(text("SELECT 1 AS one, 'a' AS two"))
        seen.append(("text", list(r.keys()), r.all()))
        r = await conn.execute(select(items.c.id).where(items.c.name == "nobody"))
        seen.append(("no rows", r.all(), r.rowcount))
        r = await conn.execute(text("SET LOCAL statement_timeout = 5000"))
        seen.append(("no status count", r.rowcount))
    return seen


async def test_the_engine_of_a_postgresql_url_uses_the_lean_driver(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    lean, stock = engines
    assert isinstance(lean.dialect.loaded_dbapi, LeanDBAPI)
    assert not isinstance(stock.dialect.loaded_dbapi, LeanDBAPI)


async def test_answers_are_those_of_the_stock_adapter(
    engines: tuple[AsyncEngine, AsyncEngine],
) -> None:
    lean, stock = engines
    got = await _session(lean, "lean-")
    expected = await _session(stock, "stock-")

    def named(seen: list[Any], prefix: str) -> list[Any]:
        return [
            (s[0], s[1], [n.removeprefix(prefix) for n in s[2]]) if s[0] == "select" else s
            for s in seen
        ]

    assert named(got, "lean-") == named(expected, "stock-")
    assert ("update", 2) in got and ("update none", 0) in got and ("no status count", -1) in got


async def test_errors_are_sqlalchemys(engines: tuple[AsyncEngine, AsyncEngine]) -> None:
    for engine in engines:
        async with engine.begin() as conn:
            await conn.execute(insert(items).values(name="twice", n=1))
        with pytest.raises(IntegrityError):
            async with engine.begin() as conn:
                await conn.execute(insert(items).values(name="twice", n=2))
        with pytest.raises(ProgrammingError):
            async with engine.connect() as conn:
                await conn.execute(text("SELEC 1"))
        async with engine.begin() as conn:  # the pool's connection still serves
            await conn.execute(delete(items).where(items.c.name == "twice"))


async def test_a_statement_prepared_once_is_found_without_preparing(
    engines: tuple[AsyncEngine, AsyncEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    lean, _ = engines
    prepared: list[str] = []
    original = _LeanConnection._prepare

    async def counted(self: Any, operation: str, asof: float) -> Any:
        if "FROM items" in operation:  # not the dialect's first statements on a connection
            prepared.append(operation)
        return await original(self, operation, asof)  # type: ignore[no-untyped-call]

    monkeypatch.setattr(_LeanConnection, "_prepare", counted)
    async with lean.connect() as conn:
        for _ in range(3):
            await conn.execute(BY_N)
        assert len(prepared) == 1
        # a schema change SQLAlchemy was told of: prepared again, as the stock adapter does
        lean.dialect._invalidate_schema_cache()  # type: ignore[attr-defined]
        await conn.execute(BY_N)
        assert len(prepared) == 2
        await conn.execute(BY_N)
        assert len(prepared) == 2


# the stock adapter's reading of a command status (sqlalchemy.dialects.postgresql.asyncpg)
_STOCK = re.compile(r"(?:SELECT|UPDATE|DELETE|INSERT \d+) (\d+)")


def _stock_rowcount(status: str | None) -> int:
    found = _STOCK.match(status or "")
    return int(found.group(1)) if found else -1


@pytest.mark.parametrize(
    "status",
    [
        "SELECT 3",
        "UPDATE 0",
        "DELETE 12",
        "INSERT 0 1",
        "INSERT 0 250",
        "MERGE 2",
        "COPY 5",
        "FETCH 1",
        "BEGIN",
        "COMMIT",
        "SET",
        "CREATE TABLE",
        "",
        None,
    ],
)
def test_row_counts_are_read_as_the_stock_adapter_reads_them(status: str | None) -> None:
    assert rowcount_of(status) == _stock_rowcount(status)


@given(
    st.sampled_from(["SELECT", "UPDATE", "DELETE", "INSERT", "MERGE", "MOVE", "CREATE"]),
    st.lists(st.integers(min_value=0, max_value=10**12), max_size=2),
)
def test_row_counts_agree_on_every_command_shape(command: str, numbers: list[int]) -> None:
    status = " ".join([command, *map(str, numbers)])
    assert rowcount_of(status) == _stock_rowcount(status)


async def test_descriptions_kept_stay_bounded(engines: tuple[AsyncEngine, AsyncEngine]) -> None:
    """Statements made per call (here 250 shapes) do not grow a connection's memory without end,
    and each still answers its own columns."""
    lean, _ = engines
    async with lean.connect() as conn:
        for i in range(250):
            r = await conn.execute(text(f"SELECT {i} AS c{i}"))
            assert (list(r.keys()), r.all()) == ([f"c{i}"], [(i,)])
        raw = await conn.get_raw_connection()
        kept = len(raw.dbapi_connection._descriptions)  # type: ignore[union-attr]
    assert 0 < kept <= 200
