"""Units of work: one connection (and, when transactional, one transaction) per block.

Events raised by saves and `emit` take one of two paths when the unit of work ends:
- an event carried by a durable channel gets an outbox row written on the same connection, in the
  same transaction as the write that raised it, and the relay delivers it after the commit;
- any other event is dispatched in-process right after the commit.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, Self
from uuid import UUID

from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import AsyncConnection

from . import clock
from ._channels import Channel
from ._dberrors import classify
from ._domain import AggregateRoot, DomainEvent
from ._errors import ConcurrencyConflict, DatabaseUnavailable, InvalidValue
from ._events import AlreadyHandled
from ._outbox import inbox_insert, write_events

if TYPE_CHECKING:
    from ._service import Service

logger = logging.getLogger("loom.runtime")

ISOLATION_LEVELS = {
    "read_committed": "READ COMMITTED",
    "repeatable_read": "REPEATABLE READ",
    "serializable": "SERIALIZABLE",
}
BEGIN_OPTION = "loom_begin"
_INBOX_INSERTS: dict[str, Any] = {}


class Work:
    """A unit of work. Use it as an async context manager (from `Service`), hand it to
    repositories, and `emit` workflow-level events."""

    __slots__ = (
        "_atomic",
        "_conn",
        "_emitted",
        "_holds_writer",
        "_inbox",
        "_last_target",
        "_pending",
        "_saves",
        "isolation",
        "service",
        "transactional",
    )

    def __init__(
        self,
        service: Service,
        transactional: bool,
        isolation: str | None,
        inbox: tuple[str, UUID] | None = None,
    ) -> None:
        self.service = service
        self.transactional = transactional
        self.isolation = isolation
        self._conn: AsyncConnection | None = None
        self._pending: list[DomainEvent] = []
        self._emitted: list[DomainEvent] = []
        self._saves = 0
        self._last_target: tuple[str, object] | None = None
        self._holds_writer = False
        # autocommit only: the short transaction of a save whose events are durable
        self._atomic: Work | None = None
        # reaction only: (consumer, event_id) to record in the inbox before the body runs
        self._inbox = inbox

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
        if self._inbox is not None:
            await self._record_inbox(*self._inbox)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._atomic is not None:  # a save failed between its write and its events
            atomic, self._atomic = self._atomic, None
            await atomic._abandon()
        if exc_type is not None:
            self._pending.clear()
            self._emitted.clear()
            await self._abandon()
            return
        if self.transactional:
            await self._commit()
        else:
            await self._release_connection()
            durable = self._take_durable(self._emitted)
            if durable:  # `emit`ted durable events of an autocommit block: their own transaction
                atomic = Work(self.service, True, None)
                atomic._emitted = [event for _, event in durable]
                await atomic._commit()
        pending, emitted = self._pending, self._emitted
        if pending or emitted:
            self._pending, self._emitted = [], []
            bus = self.service.events
            if pending:
                await bus.dispatch(pending)
            if emitted:
                await bus.dispatch(emitted)

    async def _commit(self) -> None:
        """Write the outbox rows of durable events, commit, wake the relay. What is left in
        `_pending` / `_emitted` afterwards is for in-process dispatch."""
        durable = self._take_durable(self._pending) + self._take_durable(self._emitted)
        try:
            conn = self._conn
            if durable:
                conn = conn or await self._open()
                await write_events(conn, self.service.dialect, durable)
            if conn is not None:
                self._conn = None
                try:
                    await conn.commit()
                except BaseException:
                    await _close_quietly(conn, rollback=True)
                    raise
                await conn.close()
        except (StatementError, OverflowError) as err:
            await self._abandon()
            self._reraise(err)
        except BaseException:
            await self._abandon()
            raise
        finally:
            # Before dispatch: handlers may open units of work of their own.
            self._release_writer()
        if durable:
            self.service.relay.wake_local()

    def _take_durable(self, events: list[DomainEvent]) -> list[tuple[Channel, DomainEvent]]:
        """Remove the events a channel carries from `events`, answering them with the channel."""
        routes = self.service.routes
        if not routes or not events:
            return []
        durable: list[tuple[Channel, DomainEvent]] = []
        local: list[DomainEvent] = []
        for event in events:
            channel = routes.get(event.event_type)
            if channel is None:
                local.append(event)
            else:
                durable.append((channel, event))
        if durable:
            events[:] = local
        return durable

    async def _abandon(self) -> None:
        """Roll back and close the connection (if any) and release the writer lock."""
        conn, self._conn = self._conn, None
        try:
            if conn is not None:
                await _close_quietly(conn, rollback=self.transactional)
        finally:
            self._release_writer()

    async def _record_inbox(self, consumer: str, event_id: UUID) -> None:
        dialect = self.service.dialect
        stmt = _INBOX_INSERTS.get(dialect)
        if stmt is None:
            stmt = _INBOX_INSERTS[dialect] = inbox_insert(dialect)
        params = {"consumer": consumer, "event_id": event_id, "processed_at": clock.now()}
        try:
            conn = await self.connection()
            result = await conn.execute(stmt, params)
        except (StatementError, OverflowError) as err:
            await self._abandon()
            self._reraise(err)
        except BaseException:
            await self._abandon()
            raise
        if result.rowcount == 0:
            await self._abandon()
            raise AlreadyHandled(f"{consumer} already handled event {event_id}")

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
                    conn = await conn.execution_options(**{BEGIN_OPTION: "BEGIN IMMEDIATE"})
                elif self.isolation is not None:
                    conn = await conn.execution_options(
                        isolation_level=ISOLATION_LEVELS[self.isolation]
                    )
                await conn.begin()
            elif service.is_sqlite:
                conn = await conn.execution_options(**{BEGIN_OPTION: ""})
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

    async def _write_connection(self, aggregate: AggregateRoot) -> AsyncConnection:
        """The connection a save or delete writes on. In autocommit, a write whose aggregate
        raised durable events gets a short transaction of its own, so its row and its outbox rows
        commit together (`_after_save` commits it)."""
        if self.transactional or not self.service.routes or not self._raises_durable(aggregate):
            return self._conn or await self.connection()
        if self._atomic is not None:
            stale, self._atomic = self._atomic, None
            await stale._abandon()
        # One connection at a time: give ours back before the short transaction takes the
        # SQLite writer lock and a pooled connection, else requests holding one while waiting
        # for another exhaust the pool and deadlock.
        await self._release_connection()
        atomic = Work(self.service, True, None)
        atomic._last_target = self._last_target
        self._atomic = atomic
        return await atomic.connection()

    def _raises_durable(self, aggregate: AggregateRoot) -> bool:
        routes = self.service.routes
        return any(e.event_type in routes for e in aggregate._loom_events or ())

    def _before_save(self, aggregate: str, id: object) -> None:
        self._saves += 1
        self._last_target = (aggregate, id)
        faults = self.service.faults
        if faults.armed:
            faults.check_save(self._saves)

    async def _after_save(self, events: list[DomainEvent]) -> None:
        atomic = self._atomic
        if atomic is not None:
            self._atomic = None
            atomic._pending.extend(events)
            await atomic.__aexit__(None, None, None)  # outbox rows, commit, then dispatch
            return
        if not events:
            return
        if self.transactional:
            self._pending.extend(events)
        else:
            # a reaction opens a unit of work of its own: not while this one holds a connection
            await self._release_connection()
            await self.service.events.dispatch(events)

    async def _release_connection(self) -> None:
        """Autocommit: give the connection back to the pool (the next statement takes one)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close_quietly(conn, rollback=False)

    def _reraise(
        self, err: BaseException, aggregate: str | None = None, id: object = None
    ) -> NoReturn:
        """Raise the runtime error a database error stands for (inside its `except` block):
        a lost race -> ConcurrencyConflict, unstorable data -> InvalidValue, a lost connection
        -> DatabaseUnavailable, else `err` itself."""
        kind = classify(err)
        if kind in ("conflict", "duplicate"):
            if aggregate is None and self._last_target is not None:
                aggregate, id = self._last_target
            raise ConcurrencyConflict(aggregate or "unit of work", id) from err
        if kind == "data":
            raise InvalidValue() from err
        if kind == "unavailable":
            raise DatabaseUnavailable() from err
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
