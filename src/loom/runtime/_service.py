"""The service (engine, event bus, faults) and its units of work."""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any, NoReturn, Self

from sqlalchemy import MetaData, event
from sqlalchemy.engine import Connection
from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from ._dberrors import classify
from ._domain import DomainEvent
from ._errors import ConcurrencyConflict, InvalidValue
from ._events import EventBus
from ._faults import Faults

logger = logging.getLogger("loom.runtime")

ISOLATION_LEVELS = {
    "read_committed": "READ COMMITTED",
    "repeatable_read": "REPEATABLE READ",
    "serializable": "SERIALIZABLE",
}
_BEGIN_OPTION = "loom_begin"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def _install_sqlite_hooks(engine: AsyncEngine) -> None:
    """SQLite: WAL, a busy timeout, and transactions begun by us (`BEGIN IMMEDIATE` for units of
    work, so concurrent writers queue on the write lock instead of losing an update)."""

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

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # plain `engine.begin()` keeps a real (deferred) transaction; autocommit units of work
        # pass "" and run each statement on its own
        begin = conn.get_execution_options().get(_BEGIN_OPTION, "BEGIN")
        if begin:
            conn.exec_driver_sql(begin)


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


class Service:
    """One per app (on `app.state.loom`): the engine, the event bus and the fault hooks."""

    def __init__(
        self,
        engine: AsyncEngine,
        metadata: MetaData,
        *,
        events: EventBus | None = None,
        faults: Faults | None = None,
        lock_reads: bool = True,
    ) -> None:
        self.engine = engine
        self.metadata = metadata
        self.events = events or EventBus()
        self.faults = faults or Faults()
        # the user's extern classes by name (loaded by create_app's lifespan)
        self.externs: dict[str, Any] = {}
        self.dialect = engine.dialect.name
        self.is_sqlite = self.dialect == "sqlite"
        # PostgreSQL: rows read inside `transaction()` are locked (SELECT ... FOR UPDATE), so
        # writers of one row queue instead of failing; the version check stays the safety net.
        self.lock_reads = lock_reads and self.dialect == "postgresql"
        # SQLite has one writer at a time. Transactional units of work of this process queue on
        # this lock before `BEGIN IMMEDIATE`, instead of in SQLite's busy handler, which polls with
        # sleeps of up to 100 ms and so collapses throughput under concurrency. Other processes
        # still meet the busy timeout.
        self.sqlite_writer: asyncio.Lock | None = asyncio.Lock() if self.is_sqlite else None

    @classmethod
    def from_url(cls, url: str, metadata: MetaData, **engine_options: Any) -> Service:
        """A service on `url` (`postgresql://` and `sqlite://` get their async drivers)."""
        engine = create_async_engine(async_url(url), **engine_options)
        if engine.dialect.name == "sqlite":
            _install_sqlite_hooks(engine)
        return cls(engine, metadata)

    async def create_schema(self) -> None:
        async with self.engine.connect() as conn:
            if self.is_sqlite:
                conn = await conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
            async with conn.begin():
                await conn.run_sync(self.metadata.create_all)

    async def dispose(self) -> None:
        await self.engine.dispose()

    def transaction(self, isolation: str | None = None) -> Work:
        """`async with service.transaction() as work:` one connection, one transaction; events
        are dispatched after the commit."""
        if isolation is not None and isolation not in ISOLATION_LEVELS:
            raise ValueError(
                f"isolation must be one of {sorted(ISOLATION_LEVELS)} or None, not {isolation!r}"
            )
        return Work(self, True, isolation)

    def autocommit(self) -> Work:
        """`async with service.autocommit() as work:` each save commits on its own and
        dispatches its events right after."""
        return Work(self, False, None)


class Work:
    """A unit of work. Use it as an async context manager (from `Service`), hand it to
    repositories, and `emit` workflow-level events."""

    __slots__ = (
        "_conn",
        "_emitted",
        "_holds_writer",
        "_last_target",
        "_pending",
        "_saves",
        "isolation",
        "service",
        "transactional",
    )

    def __init__(self, service: Service, transactional: bool, isolation: str | None) -> None:
        self.service = service
        self.transactional = transactional
        self.isolation = isolation
        self._conn: AsyncConnection | None = None
        self._pending: list[DomainEvent] = []
        self._emitted: list[DomainEvent] = []
        self._saves = 0
        self._last_target: tuple[str, object] | None = None
        self._holds_writer = False

    # -- public -----------------------------------------------------------------------------
    def emit(self, event: DomainEvent) -> None:
        """Record a workflow-level event; dispatched after the block succeeds (after commit)."""
        self._emitted.append(event)

    @property
    def lock_reads(self) -> bool:
        return self.transactional and self.service.lock_reads

    async def connection(self) -> AsyncConnection:
        """The unit of work's connection (opened, and in `transaction()` begun, on first use)."""
        conn = self._conn
        if conn is None:
            conn = await self._open()
        return conn

    # -- context manager --------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn = self._conn
        try:
            if exc_type is not None:
                self._pending.clear()
                self._emitted.clear()
                if conn is not None:
                    self._conn = None
                    await _close_quietly(conn, rollback=self.transactional)
                return
            if conn is not None:
                self._conn = None
                if self.transactional:
                    try:
                        await conn.commit()
                    except (StatementError, OverflowError) as err:
                        await _close_quietly(conn, rollback=True)
                        self._reraise(err)
                    except BaseException:
                        await _close_quietly(conn, rollback=True)
                        raise
                await conn.close()
        finally:
            # Before dispatch: handlers may open units of work of their own.
            self._release_writer()
        pending, emitted = self._pending, self._emitted
        if pending or emitted:
            self._pending, self._emitted = [], []
            bus = self.service.events
            if pending:
                await bus.dispatch(pending)
            if emitted:
                await bus.dispatch(emitted)

    # -- used by repositories -----------------------------------------------------------------
    def _release_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            writer = self.service.sqlite_writer
            assert writer is not None
            writer.release()

    async def _open(self) -> AsyncConnection:
        service = self.service
        if self.transactional and service.sqlite_writer is not None:
            await service.sqlite_writer.acquire()
            self._holds_writer = True
        try:
            conn = await service.engine.connect()
        except BaseException:
            self._release_writer()
            raise
        try:
            if self.transactional:
                if service.is_sqlite:
                    conn = await conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
                elif self.isolation is not None:
                    conn = await conn.execution_options(
                        isolation_level=ISOLATION_LEVELS[self.isolation]
                    )
                await conn.begin()
            elif service.is_sqlite:
                conn = await conn.execution_options(**{_BEGIN_OPTION: ""})
            else:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        except StatementError as err:
            await _close_quietly(conn, rollback=True)
            self._release_writer()
            self._reraise(err)
        except BaseException:
            await _close_quietly(conn, rollback=True)
            self._release_writer()
            raise
        self._conn = conn
        return conn

    def _before_save(self, aggregate: str, id: object) -> None:
        self._saves += 1
        self._last_target = (aggregate, id)
        faults = self.service.faults
        if faults.armed:
            faults.check_save(self._saves)

    async def _after_save(self, events: list[DomainEvent]) -> None:
        if not events:
            return
        if self.transactional:
            self._pending.extend(events)
        else:
            await self.service.events.dispatch(events)

    def _reraise(
        self, err: BaseException, aggregate: str | None = None, id: object = None
    ) -> NoReturn:
        """Raise the runtime error a database error stands for (inside its `except` block):
        a lost race -> ConcurrencyConflict, unstorable data -> InvalidValue, else `err` itself."""
        kind = classify(err)
        if kind in ("conflict", "duplicate"):
            if aggregate is None and self._last_target is not None:
                aggregate, id = self._last_target
            raise ConcurrencyConflict(aggregate or "unit of work", id) from err
        if kind == "data":
            raise InvalidValue() from err
        raise err


async def _close_quietly(conn: AsyncConnection, *, rollback: bool) -> None:
    try:
        if rollback:
            await conn.rollback()
    except Exception:
        logger.debug("rollback failed", exc_info=True)
        try:
            await conn.invalidate()
        except Exception:
            logger.debug("invalidate failed", exc_info=True)
    try:
        await conn.close()
    except Exception:
        logger.debug("close failed", exc_info=True)
