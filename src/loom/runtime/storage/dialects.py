"""The INSERT of a database's own dialect (for its ON CONFLICT clauses), imported for the database
a service runs on only: a service on SQLite never loads SQLAlchemy's PostgreSQL dialect (about
2 MB and 30 ms of its start, docs/benchmarks.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Table


def dialect_insert(dialect: str) -> Callable[[Table], Any]:
    """`insert` of `dialect`'s SQLAlchemy dialect: PostgreSQL's or SQLite's."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert
    raise NotImplementedError(f"Loom needs ON CONFLICT support, which {dialect} lacks here")
