"""Classify database errors: lost races (-> 409), bad data (-> 422), a lost or refused
connection (-> 503), a table or column the statement names that the database no longer has (the
schema changed under this replica: a migration applied meanwhile, -> 503), the rest (-> 500)."""

from __future__ import annotations

import errno
import socket
import sqlite3
from typing import Literal

from sqlalchemy import Table, UniqueConstraint
from sqlalchemy.exc import DataError, DBAPIError

from loom.runtime.values.types import ValueNotStorable

Kind = Literal["conflict", "duplicate", "data", "unavailable", "schema", "other"]

# connection_exception (08xxx), admin / crash shutdown, cannot connect now, too many connections
_UNAVAILABLE_SQLSTATES = {"57P01", "57P02", "57P03", "53300"}
_UNAVAILABLE_NAMES = {
    "ConnectionDoesNotExistError",
    "ConnectionFailureError",
    "ConnectionRejectionError",
    "CannotConnectNowError",
    "AdminShutdownError",
    "CrashShutdownError",
    "TooManyConnectionsError",
}
_UNAVAILABLE_TEXT = (
    "connection is closed",
    "connection was closed",
    "unable to open database file",
    "cannot operate on a closed database",
    "connection reset",
    "connection refused",
)
_UNAVAILABLE_ERRNOS = {
    errno.ECONNREFUSED,
    errno.ECONNRESET,
    errno.ECONNABORTED,
    errno.EPIPE,
    errno.EHOSTUNREACH,
    errno.ENETUNREACH,
    errno.ETIMEDOUT,
}

# undefined_column, undefined_table; SQLite's words for the same
_SCHEMA_SQLSTATES = {"42703", "42P01"}
_SCHEMA_NAMES = {"UndefinedColumnError", "UndefinedTableError"}
_SQLITE_SCHEMA_TEXT = ("no such column", "no such table", "has no column named")

_RACE_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected
_SQLITE_RACE_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes, & 0xFF)
_SQLITE_RACE_TEXT = ("database is locked", "database table is locked", "busy")


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = getattr(current, "orig", None) or current.__cause__ or current.__context__
    return seen


def classify(exc: BaseException) -> Kind:
    """What a database exception means for the client."""
    for err in _chain(exc):
        if _lost_connection(err):
            return "unavailable"
        code = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
        if code in _SCHEMA_SQLSTATES or type(err).__name__ in _SCHEMA_NAMES:
            return "schema"
        if isinstance(err, sqlite3.OperationalError) and any(
            t in str(err).lower() for t in _SQLITE_SCHEMA_TEXT
        ):
            return "schema"
        if isinstance(code, str):
            if code in _RACE_SQLSTATES:
                return "conflict"
            if code == "23505":
                return "duplicate"
            # 22xxx: data exceptions; 54000: a value too large for its index (a long unique key)
            if code.startswith("22") or code == "54000":
                return "data"
        if isinstance(err, sqlite3.Error):
            errcode = getattr(err, "sqlite_errorcode", None)
            if isinstance(errcode, int) and errcode & 0xFF in _SQLITE_RACE_CODES:
                return "conflict"
            text = str(err).lower()
            if any(t in text for t in _SQLITE_RACE_TEXT):
                return "conflict"
            if isinstance(err, sqlite3.IntegrityError) and "unique" in text:
                return "duplicate"
            # a criterion's decimal function refused its operands (a division by zero), as
            # PostgreSQL's 22012 is
            if "user-defined function raised exception" in text:
                return "data"
        if isinstance(err, (OverflowError, ValueNotStorable, DataError)):
            return "data"
        name = type(err).__name__
        if name in {"SerializationError", "DeadlockDetectedError"}:
            return "conflict"
        if name == "UniqueViolationError":
            return "duplicate"
    if isinstance(exc, DBAPIError):
        text = str(exc.orig).lower()
        if any(t in text for t in _SQLITE_RACE_TEXT[:2]):
            return "conflict"
        if "out of range" in text or "out of int" in text:
            return "data"
    return "other"


def _lost_connection(err: BaseException) -> bool:
    """The database is down, restarting, refusing connections, or dropped this one."""
    if isinstance(err, DBAPIError) and err.connection_invalidated:
        return True
    code = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
    if isinstance(code, str) and (code.startswith("08") or code in _UNAVAILABLE_SQLSTATES):
        return True
    if type(err).__name__ in _UNAVAILABLE_NAMES:
        return True
    if isinstance(err, (ConnectionError, socket.gaierror)):
        return True
    if isinstance(err, OSError):
        return err.errno in _UNAVAILABLE_ERRNOS
    if isinstance(err, (sqlite3.OperationalError, sqlite3.ProgrammingError)) or (
        type(err).__name__ == "InterfaceError"
    ):
        text = str(err).lower()
        return any(t in text for t in _UNAVAILABLE_TEXT)
    return False


# what a driver says when it refuses a statement on a connection it already knows is gone
_NOT_SENT_TEXT = ("the underlying connection is closed", "unable to open database file")


def never_sent(exc: BaseException) -> bool:
    """Whether the failed statement surely never reached the database: no connection could be
    made, or the driver refused it on a connection already closed (a pooled connection the
    server dropped while it was idle). A connection lost while the statement was out is not."""
    for err in _chain(exc):
        if isinstance(err, ConnectionRefusedError) or (
            isinstance(err, OSError) and err.errno == errno.ECONNREFUSED
        ):
            return True
        if type(err).__name__ in {"InterfaceError", "OperationalError"}:
            text = str(err).lower()
            if any(t in text for t in _NOT_SENT_TEXT):
                return True
    return False


def clashed_unique(exc: BaseException, table: Table) -> tuple[str, ...] | None:
    """The columns of the unique constraint of `table` a duplicate-key error names (None when it
    names none of them): PostgreSQL names the constraint, SQLite lists its columns."""
    uniques = [c for c in table.constraints if isinstance(c, UniqueConstraint)]
    for err in _chain(exc):
        text = str(err)
        named = getattr(err, "constraint_name", None)  # asyncpg's UniqueViolationError
        for uq in uniques:
            if isinstance(uq.name, str) and (named == uq.name or f'"{uq.name}"' in text):
                return tuple(c.name for c in uq.columns)
        if isinstance(err, sqlite3.IntegrityError):
            _, found, listed = text.partition("UNIQUE constraint failed: ")
            if found:  # `UNIQUE constraint failed: t.a, t.b`
                columns = {part.strip().rpartition(".")[2] for part in listed.split(",")}
                for uq in uniques:
                    if {c.name for c in uq.columns} == columns:
                        return tuple(c.name for c in uq.columns)
    return None
