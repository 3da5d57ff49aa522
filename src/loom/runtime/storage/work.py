"""Units of work: one connection (and, when transactional, one transaction) per block.

Events raised by saves and `emit` take one of two paths when the unit of work ends:
- an event carried by a durable channel gets an outbox row written on the same connection, in the
  same transaction as the write that raised it, and the relay delivers it after the commit;
- any other event is dispatched in-process right after the commit.

A unit of work never holds two pooled connections at once, and never waits on a lock (the SQLite
writer lock, a pool checkout) while holding one: an autocommit block gives its connection back
before a save's short transaction and before in-process dispatch (whose reactions open units of
work of their own). Otherwise requests that each hold one connection and wait for a second
exhaust the pool and deadlock.

Under an `Idempotency-Key` (`http/idempotency.py`) the first unit of work of the request is *keyed*:
it runs in one transaction (an autocommit block too, with a SAVEPOINT per save) and, at the end of
its block, is parked on `Parking` instead of committing; the HTTP layer then records the key and
the answer on the same connection, commits, and dispatches the events. Any later unit of work of
the request joins that transaction (in a SAVEPOINT of its own) rather than wait for its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, Self

from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncTransaction,
)

from loom.runtime.storage.dberrors import classify, never_sent
from loom.runtime.storage.hosts import UnitHost
from loom.runtime.storage.journal import StepOf
from loom.runtime.storage.mapping import DELETED_ATTR, VERSION_ATTR
from loom.runtime.values.domain import AggregateRoot, DomainEvent, check_event
from loom.runtime.values.errors import (
    ConcurrencyConflict,
    DatabaseUnavailable,
    InvalidValue,
    LoomError,
    OutcomeUnknown,
    SchemaChanged,
)

if TYPE_CHECKING:
    pass

logger = logging.getLogger("loom.runtime")

# a reaction's first statements, on its unit of work's connection before the body runs: the
# inbox row of the delivery (raising when a previous delivery already applied it)
Entry = Callable[[AsyncConnection], Awaitable[None]]


class Units(Protocol):
    """What opens units of work (the service), for a subsystem that runs its own."""

    @property
    def engine(self) -> AsyncEngine: ...

    @property
    def dialect(self) -> str: ...

    def transaction(self, isolation: str | None = None) -> Work: ...

    def autocommit(self) -> Work: ...


class Parking:
    """A keyed request's hold on its first unit of work (set on `parking` by the HTTP layer).

    `work` is that unit of work once it started; `parked` is true when its block ended and it
    waits, uncommitted, for the answer to be recorded (false: it rolled back, nothing written)."""

    __slots__ = ("parked", "work")

    def __init__(self) -> None:
        self.work: Work | None = None
        self.parked = False


parking: ContextVar[Parking | None] = ContextVar("loom_parking", default=None)


class Work:
    """A unit of work. Use it as an async context manager (from `Service`), hand it to
    repositories, and `emit` workflow-level events."""

    __slots__ = (
        "_atomic",
        "_conn",
        "_emitted",
        "_entry",
        "_guest_savepoint",
        "_holds_writer",
        "_host",
        "_keyed",
        "_last_target",
        "_pending",
        "_saved",
        "_savepoint",
        "_savepoints",
        "_saves",
        "_span",
        "_wrote",
        "host",
        "isolation",
        "step",
        "transactional",
    )

    def __init__(
        self,
        host: UnitHost,
        transactional: bool,
        isolation: str | None,
        entry: Entry | None = None,
        step: StepOf | None = None,
    ) -> None:
        self.host = host
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
        # reaction only: records the durable delivery in the inbox (and, for a broker message
        # with key counts, in its consumer's progress) before the body runs
        self._entry = entry
        # what runs the body (a reaction, a timeout), for the journal of the instances it saves
        # (`storage/journal.py`); None: a command
        self.step = step
        # a save or delete was applied (in autocommit, committed at once; set by the repository)
        self._wrote = False
        # what a block that is not all-or-nothing has written for good, (aggregate, id) in order:
        # a refusal after it says what it did not undo
        self._saved: list[tuple[str, object]] = []
        # keyed (see Parking): the request's hold, and for an autocommit block the savepoint of
        # its last save with the aggregate and version it saved
        self._keyed: Parking | None = None
        self._savepoints = False
        self._savepoint: tuple[AsyncTransaction, AggregateRoot, int] | None = None
        # a later unit of work of a keyed request joins the keyed one's transaction
        self._host: Work | None = None
        self._guest_savepoint: AsyncTransaction | None = None
        # traced: the unit of work's span, current for its block, and the token that ends that
        self._span: tuple[Any, object] | None = None

    # -- public -----------------------------------------------------------------------------
    def emit(self, event: DomainEvent) -> None:
        """Record a workflow-level event; dispatched after the block succeeds (after commit)."""
        check_event(event)
        self._emitted.append(event)

    @property
    def holds_writer(self) -> bool:
        """Whether this unit of work holds the SQLite writer lock (its transaction began)."""
        return self._holds_writer

    @property
    def lock_reads(self) -> bool:
        return self.transactional and self.host.lock_reads

    async def connection(self) -> AsyncConnection:
        """The unit of work's connection (opened, and in `transaction()` begun, on first use)."""
        conn = self._conn
        if conn is None:
            conn = await self._open()
        return conn

    # -- context manager --------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        tracer = self.host.tracer
        if tracer is not None:
            self._span = tracer.unit_of_work(self._kind(), self.host.dialect, self.isolation)
        if self._entry is not None:
            await self._enter(self._entry)
        else:
            held = parking.get()
            if held is not None:
                host = held.work
                if host is None:
                    held.work, self._keyed = self, held
                    if not self.transactional:
                        # the saves, the answer and the key commit together; a failed save
                        # rolls back to its savepoint, and what the saves before it did stays
                        self.transactional, self._savepoints = True, True
                elif host._keyed is not None:
                    # A second unit of work of the request would wait for the keyed one's
                    # SQLite writer lock (or commit apart from the key): it joins instead.
                    await self._join(host)
        return self

    async def _join(self, host: Work) -> None:
        conn = host._conn or await host.connection()
        self._host, self._conn, self.transactional = host, conn, True
        self._guest_savepoint = await conn.begin_nested()

    async def _leave(self, exc_type: type[BaseException] | None) -> None:
        """A joined unit of work ends: its writes stay in the host's transaction (or roll back
        to its savepoint), its events go to the host's."""
        host, savepoint = self._host, self._guest_savepoint
        assert host is not None and savepoint is not None
        self._host, self._guest_savepoint, self._conn = None, None, None
        pending, emitted = self._pending, self._emitted
        self._pending, self._emitted = [], []
        if exc_type is not None:
            await savepoint.rollback()
            return
        await savepoint.commit()
        host._pending.extend(pending)
        host._emitted.extend(emitted)

    def _kind(self) -> str:
        if self._entry is not None:
            return "reaction"
        return "transaction" if self.transactional else "autocommit"

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._span is None:
            await self._exit(exc_type, exc)
            return
        span = self._span  # kept while the block ends: its commit's span is a child
        tracer = self.host.tracer
        assert tracer is not None
        try:
            await self._exit(exc_type, exc)
        except BaseException as raised:
            tracer.ended_with(span, raised)
            raise
        else:
            tracer.ended_with(span, exc)
        finally:
            self._span = None
            tracer.close(span)

    async def _exit(self, exc_type: type[BaseException] | None, exc: BaseException | None) -> None:
        if self._atomic is not None:  # a save failed between its write and its events
            atomic, self._atomic = self._atomic, None
            await atomic._abandon()
        if self._saved and isinstance(exc, LoomError):
            exc.note_saved(self._saved)
        if self._host is not None:
            await self._leave(exc_type)
            return
        if self._keyed is not None:
            await self._park(exc_type)
            return
        if exc_type is not None:
            self._pending.clear()
            self._emitted.clear()
            await self._abandon()
            return
        await self._finish()

    async def _finish(self) -> None:
        """Commit (or, in autocommit, the `emit`ted durable events) and dispatch."""
        if self.transactional:
            await self._commit()
        else:
            await self._release_connection()
            durable = self._take_durable(self._emitted)
            if durable:  # `emit`ted durable events of an autocommit block: their own transaction
                atomic = Work(self.host, True, None)
                atomic._emitted = durable
                atomic._span = self._span  # its COMMIT is traced as this block's
                await atomic._commit()
        pending, emitted = self._pending, self._emitted
        if pending or emitted:
            self._pending, self._emitted = [], []
            outlet = self.host.outlet
            if pending:
                await outlet.dispatch(pending)
            if emitted:
                await outlet.dispatch(emitted)

    async def _commit(self) -> None:
        """Write the outbox rows of durable events, commit, wake the relay. What is left in
        `_pending` / `_emitted` afterwards is for in-process dispatch."""
        durable = self._take_durable(self._pending) + self._take_durable(self._emitted)
        written: Sequence[Any] = ()
        try:
            conn = self._conn
            if durable:
                conn = conn or await self._open()
                written = await self.host.outlet.write(conn, durable)
            if conn is not None:
                self._conn = None
                if self._span is not None:
                    await self._traced_commit(conn, self._span)
                else:
                    await self._send_commit(conn)
                if self._wrote or durable:
                    self.host.faults.committed(self._entry is None)
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
            self.host.outlet.sent(written)

    async def _traced_commit(self, conn: AsyncConnection, unit: tuple[Any, object]) -> None:
        tracer = self.host.tracer
        assert tracer is not None
        with tracer.commit_span(unit, self.host.dialect, self.isolation):
            await self._send_commit(conn)

    async def _send_commit(self, conn: AsyncConnection) -> None:
        """COMMIT. A failure the database reported (a lost race) means rolled back; any other
        failure of the commit step (the connection dropped) leaves the outcome unknown."""
        try:
            await conn.commit()
            faults = self.host.faults
            if faults.commit_lost and self._wrote and faults.take_lost_commit():
                await _break(conn)
        except Exception as err:
            await _close_quietly(conn, rollback=True)
            if classify(err) in ("conflict", "duplicate", "data"):
                raise
            raise OutcomeUnknown() from err
        except BaseException:
            await _close_quietly(conn, rollback=True)
            raise

    # -- keyed (Idempotency-Key) --------------------------------------------------------------
    async def _park(self, exc_type: type[BaseException] | None) -> None:
        keyed = self._keyed
        assert keyed is not None
        if exc_type is not None:
            self._emitted.clear()
            if not self._savepoints or not issubclass(exc_type, Exception):
                self._pending.clear()
                self._keyed = None
                await self._abandon()
                return
        try:
            await self._close_savepoint()
        except BaseException:
            self._keyed = None
            await self._abandon()
            raise
        keyed.parked = True

    async def _close_savepoint(self) -> None:
        """Release the last save's savepoint if the save went through, else roll back to it."""
        held, self._savepoint = self._savepoint, None
        if held is None:
            return
        savepoint, aggregate, version = held
        d = aggregate.__dict__
        if d.get(VERSION_ATTR, 0) != version or d.get(DELETED_ATTR):
            await savepoint.commit()
        else:
            await savepoint.rollback()

    async def finish_parked(self) -> None:
        """Commit a parked unit of work (the caller wrote the key row on `connection()`), then
        dispatch its events. OutcomeUnknown when the connection fails during COMMIT."""
        self._keyed = None
        await self._finish()

    async def abandon_parked(self) -> None:
        """Roll back a parked unit of work: nothing it did is kept."""
        self._keyed = None
        self._pending.clear()
        self._emitted.clear()
        await self._abandon()

    def _take_durable(self, events: list[DomainEvent]) -> list[DomainEvent]:
        """Remove the events a channel carries from `events`, answering them."""
        routes = self.host.outlet.routes
        if not routes or not events:
            return []
        durable: list[DomainEvent] = []
        local: list[DomainEvent] = []
        for event in events:
            if event.event_type in routes:
                durable.append(event)
            else:
                local.append(event)
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

    async def _enter(self, entry: Entry) -> None:
        try:
            await entry(await self.connection())
        except (StatementError, OverflowError) as err:
            await self._abandon()
            self._reraise(err)
        except BaseException:
            await self._abandon()
            raise

    # -- used by repositories -----------------------------------------------------------------
    def _release_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            writer = self.host.sqlite_writer
            assert writer is not None
            writer.release()

    async def _open(self) -> AsyncConnection:
        host = self.host
        if self.transactional and host.sqlite_writer is not None:
            await host.sqlite_writer.acquire()
            self._holds_writer = True
        try:
            conn = await host.unit_engines[self.transactional, self.isolation].connect()
        except (StatementError, OSError) as err:
            self._release_writer()
            self._reraise(err)
        except BaseException:
            self._release_writer()
            raise
        try:
            if self.transactional:
                await conn.begin()
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

    async def _write_connection(
        self, aggregate: AggregateRoot | None, carry_emits: bool = False
    ) -> AsyncConnection:
        """The connection a save or delete (of an aggregate, or of an instance row: None) writes
        on. In autocommit, a write with durable events gets a short transaction of its own, so its
        row and its outbox rows commit together (`_after_save` commits it): the events its
        aggregate raised and, when the body marks it `carry_emits` (the last write of a group of
        saves), the durable events the body `emit`ted so far, which would otherwise get a
        transaction of their own after it, and a crash in between would lose them."""
        if self._savepoints:
            await self._close_savepoint()
            conn = self._conn or await self.connection()
            if aggregate is not None:
                version = aggregate.__dict__.get(VERSION_ATTR, 0)
                self._savepoint = (await conn.begin_nested(), aggregate, version)
            return conn
        if self.transactional or not self.host.outlet.routes:
            return self._conn or await self.connection()
        carried = self._take_durable(self._emitted) if carry_emits else []
        if not carried and (aggregate is None or not self._raises_durable(aggregate)):
            return self._conn or await self.connection()
        if self._atomic is not None:
            stale, self._atomic = self._atomic, None
            await stale._abandon()
        # One connection at a time: give ours back before the short transaction takes the
        # SQLite writer lock and a pooled connection, else requests holding one while waiting
        # for another exhaust the pool and deadlock.
        await self._release_connection()
        atomic = Work(self.host, True, None)
        atomic._last_target = self._last_target
        atomic._emitted = carried
        self._atomic = atomic
        conn = await atomic.connection()
        atomic._wrote = True  # its one purpose is this write
        return conn

    def _raises_durable(self, aggregate: AggregateRoot) -> bool:
        routes = self.host.outlet.routes
        return any(e.event_type in routes for e in aggregate._loom_events or ())

    def _before_save(self, aggregate: str, id: object) -> None:
        self._saves += 1
        self._last_target = (aggregate, id)
        faults = self.host.faults
        if faults.armed:
            faults.check_save(self._saves)

    async def _after_save(self, events: list[DomainEvent], saved: tuple[str, object]) -> None:
        """After every save or delete: commit its short transaction (autocommit, durable events)
        or dispatch the events it raised; `saved` (what, which id) is now written."""
        atomic = self._atomic
        if atomic is not None:
            self._atomic = None
            atomic._pending.extend(events)
            await atomic.__aexit__(None, None, None)  # outbox rows, commit, then dispatch
            self._saved.append(saved)
            return
        if not self.transactional:
            self.host.faults.committed(self._entry is None)
        if self._savepoints or not self.transactional:
            self._saved.append(saved)
        if not events:
            return
        if self.transactional:
            self._pending.extend(events)
        else:
            # a reaction opens a unit of work of its own: not while this one holds a connection
            await self._release_connection()
            await self.host.outlet.dispatch(events)

    async def _release_connection(self) -> None:
        """Autocommit: give the connection back to the pool (the next statement takes one)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await _close_quietly(conn, rollback=False)

    def _reraise(
        self,
        err: BaseException,
        aggregate: str | None = None,
        id: object = None,
        *,
        sending: bool = False,
    ) -> NoReturn:
        """Raise the runtime error a database error stands for (inside its `except` block):
        a lost race -> ConcurrencyConflict, unstorable data -> InvalidValue, a lost connection
        -> DatabaseUnavailable, or OutcomeUnknown in autocommit when a write may have been
        applied: an earlier one (`_wrote`), or the one `sending` unless the driver refused it
        before it left (a connection already closed, a database that cannot be reached)."""
        kind = classify(err)
        if kind in ("conflict", "duplicate"):
            if aggregate is None and self._last_target is not None:
                aggregate, id = self._last_target
            raise ConcurrencyConflict(aggregate or "unit of work", id) from err
        if kind == "data":
            raise InvalidValue() from err
        if kind == "schema":
            raise SchemaChanged() from err
        if kind == "unavailable":
            maybe_applied = self._wrote or (sending and not never_sent(err))
            if maybe_applied and not self.transactional:
                raise OutcomeUnknown() from err
            raise DatabaseUnavailable() from err
        raise err


async def _break(conn: AsyncConnection) -> None:
    """The `lose_commit` fault: terminate the driver connection under SQLAlchemy's feet, then
    talk to it, so the commit step fails the way a dropped connection makes it fail."""
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    terminate = getattr(driver, "terminate", None)  # asyncpg
    if terminate is not None:
        terminate()
    else:  # aiosqlite
        await driver.close()  # type: ignore[union-attr]
    await conn.exec_driver_sql("SELECT 1")
    raise ConnectionResetError("injected fault: the connection was lost after COMMIT")


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
