"""The database engine a service runs on: its URL's driver, SQLite's connection set-up, and the
engine views units of work connect through."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, make_url, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from loom.model.isolation import ISOLATION_LEVELS, ISOLATION_SQL
from loom.runtime.storage import greenlets
from loom.runtime.storage.criteria import install_sqlite_functions

BEGIN_OPTION = "loom_begin"
UnitEngines = dict[tuple[bool, str | None], AsyncEngine]
SQLITE_BUSY_TIMEOUT_MS = 30_000
# PostgreSQL: CREATE TABLE IF NOT EXISTS is not safe against itself (two creators collide on the
# table's row type in pg_type), so schema creation holds this transaction-scoped advisory lock;
# `loom migrate apply` holds the same one, so a service never checks a schema being migrated
SCHEMA_LOCK = text("SELECT pg_advisory_xact_lock(7206050563313647213)")


def install_sqlite_hooks(engine: AsyncEngine) -> None:
    """SQLite: WAL, a busy timeout, the functions criteria compute decimals with, and transactions
    begun by us (`BEGIN IMMEDIATE` for units of work, so concurrent writers queue on the write
    lock instead of losing an update)."""

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver never emits BEGIN itself
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()
        install_sqlite_functions(dbapi_connection)

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # plain `engine.begin()` keeps a real (deferred) transaction; autocommit units of work
        # pass "" and run each statement on its own
        begin = conn.get_execution_options().get(BEGIN_OPTION, "BEGIN")
        if begin:
            conn.exec_driver_sql(begin)


def create_engine(url: str, **options: Any) -> AsyncEngine:
    """An async engine on `url` (`async_url`): on aiosqlite, through `OneTripDBAPI`, one trip to
    aiosqlite's thread per statement; on asyncpg, through `LeanDBAPI`, less Python per
    statement; on SQLite, with `install_sqlite_hooks`. SQLAlchemy's asyncio API then runs its
    calls in greenlets it keeps (`storage/greenlets.py`)."""
    greenlets.install()
    url = async_url(url)
    if make_url(url).drivername == "sqlite+aiosqlite" and "module" not in options:
        from loom.runtime.storage.sqlite_driver import one_trip_dbapi

        options["module"] = one_trip_dbapi()
    elif make_url(url).drivername == "postgresql+asyncpg" and "module" not in options:
        from loom.runtime.storage.asyncpg_driver import lean_dbapi

        options["module"] = lean_dbapi()
    engine = create_async_engine(url, **options)
    if engine.dialect.name == "sqlite":
        install_sqlite_hooks(engine)
    return engine


def async_url(url: str) -> str:
    """`url` with the async driver Loom uses when it names none."""
    for plain, driver in (
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
        ("sqlite://", "sqlite+aiosqlite://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url


def in_memory_sqlite(url: str) -> bool:
    """Whether `url` is an in-memory SQLite database, which SQLAlchemy serves from one connection
    (a StaticPool: nothing to size), as it decides it."""
    parsed = make_url(async_url(url))
    if parsed.get_backend_name() != "sqlite":
        return False
    return parsed.database in (None, "", ":memory:") or parsed.query.get("mode") == "memory"


def unit_engines(engine: AsyncEngine) -> UnitEngines:
    """The engine each kind of unit of work connects through, by (transactional, isolation):
    views of `engine` sharing its pool, with the connection options a unit of work needs set
    once here, not on each connection (every `execution_options` call on a connection is a
    round through SQLAlchemy's sync layer). An engine made elsewhere than `create_engine` gets
    the kept greenlets here."""
    greenlets.install()
    if engine.dialect.name == "sqlite":  # one writer at a time: no isolation levels to pick
        immediate = _immediate_engine(engine)
        return {
            (True, None): immediate,
            **{(True, level): immediate for level in ISOLATION_LEVELS},
            (False, None): engine.execution_options(**{BEGIN_OPTION: ""}),
        }
    return {
        (True, None): engine,
        **{
            (True, level): engine.execution_options(isolation_level=name)
            for level, name in ISOLATION_SQL.items()
        },
        (False, None): engine.execution_options(isolation_level="AUTOCOMMIT"),
    }


def _immediate_engine(engine: AsyncEngine) -> AsyncEngine:
    """SQLite: an engine on `engine`'s own pool (its connect hook included) whose transactions
    begin with `BEGIN IMMEDIATE`. An engine of its own rather than an `execution_options` view:
    a view joins its event listeners to its parent's, and every statement of every unit of work
    then walks both lists (a tenth of a transfer's Python calls)."""
    immediate = create_async_engine(
        engine.url, pool=engine.sync_engine.pool, module=engine.dialect.loaded_dbapi
    )

    @event.listens_for(immediate.sync_engine, "begin")
    def _begin_immediate(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return immediate
