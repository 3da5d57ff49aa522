"""Classify database errors: lost races (-> 409), bad data (-> 422), the rest (-> 500)."""

from __future__ import annotations

import sqlite3
from typing import Literal

from sqlalchemy.exc import DataError, DBAPIError

from .types import ValueNotStorable

Kind = Literal["conflict", "duplicate", "data", "other"]

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
        code = getattr(err, "sqlstate", None) or getattr(err, "pgcode", None)
        if isinstance(code, str):
            if code in _RACE_SQLSTATES:
                return "conflict"
            if code == "23505":
                return "duplicate"
            if code.startswith("22"):
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
