"""SQLite through aiosqlite in one trip to its thread per statement.

aiosqlite runs each sqlite3 call on a thread of its own, and SQLAlchemy's adapter makes four of
those calls for a query (make a cursor, execute, fetch the rows, close) and three for any other
statement. Each trip hands the GIL from the event loop to the thread and back: a transfer made 19
of them, and under load the two threads spent more time waking each other (futex calls, moving
between cores) than running SQL. `OneTripDBAPI` is SQLAlchemy's aiosqlite adapter with a cursor
that does the whole statement in one trip, as sqlite3 would in a plain program, and keeps its
rows, description and row count for SQLAlchemy to read after. Server-side cursors
(`stream()`) stay as they were: they fetch in batches on purpose.

It uses what SQLAlchemy's own adapter uses: aiosqlite's queue of calls (`Connection._execute`)
and its sqlite3 connection (`_conn`).
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

# (description, rowcount, lastrowid, rows) of one statement, read on aiosqlite's thread
_Outcome = tuple[Any, int, int | None, list[Any]]


def _run(conn: sqlite3.Connection, operation: str, parameters: Any) -> _Outcome:
    cursor = conn.cursor()
    try:
        if parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return description, cursor.rowcount, cursor.lastrowid, rows
    finally:
        cursor.close()


def _run_many(conn: sqlite3.Connection, operation: str, parameters: Sequence[Any]) -> _Outcome:
    cursor = conn.cursor()
    try:
        cursor.executemany(operation, parameters)
        return None, cursor.rowcount, cursor.lastrowid, []
    finally:
        cursor.close()


class _OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A cursor with no aiosqlite cursor behind it: each `execute` is one trip."""

    __slots__ = ("_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: Any) -> None:
        # deliberately not the parent's __init__: that makes an aiosqlite cursor (a trip)
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]  # never read: close() is ours
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return 1

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        pass  # every row is fetched in the statement's trip

    async def _async_soft_close(self) -> None:
        pass  # nothing is open on the thread

    def close(self) -> None:
        self._rows.clear()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        self._finish(_run, operation, parameters)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        self._finish(_run_many, operation, seq_of_parameters)

    def _finish(self, run: Any, operation: Any, parameters: Any) -> None:
        connection = cast(aiosqlite.Connection, self._connection)
        trip: Callable[..., Awaitable[_Outcome]] = connection._execute
        try:
            outcome = await_(trip(run, connection._conn, operation, parameters))
        except Exception as error:  # noqa: BLE001  # the adapter maps it to a DBAPI error, as SQLAlchemy does
            self._adapt_connection._handle_exception(error)
        self._description, self._rowcount, self._lastrowid, rows = outcome
        self._rows = collections.deque(rows)


class _OneTripConnection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ()
    _cursor_cls = _OneTripCursor


class OneTripDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """SQLAlchemy's aiosqlite DBAPI adapter, its connections' cursors making one trip each."""

    def connect(self, *arg: Any, **kw: Any) -> AsyncAdapt_aiosqlite_connection:
        adapted = super().connect(*arg, **kw)
        return _OneTripConnection(self, adapted._connection)


def one_trip_dbapi() -> OneTripDBAPI:
    """The DBAPI module to give `create_async_engine(module=…)` for a `sqlite+aiosqlite` URL."""
    return OneTripDBAPI(aiosqlite, sqlite3)
