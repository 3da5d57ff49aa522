"""SQL helpers for generated criteria (`criterion Name(params) of Agg = condition`).

A criterion becomes one SQLAlchemy where-clause over the aggregate's table, built from its
parameters when called; the database filters, never Python. Two column types need care so that
comparisons and ordering mean the same on every engine:

- `DecimalText` is TEXT on SQLite: `as_number(x)` reads it (and any value compared with it) as a
  number there (`CAST(x AS REAL)`), and leaves it as the exact NUMERIC on PostgreSQL.
- `UtcDateTime` is a fixed-width ISO-8601 UTC string on SQLite, which sorts chronologically, so a
  plain comparison with a bound datetime (bound through the same type) is already correct.
- Enums are stored as their value strings: compare with `Status.OPEN.value` (or a StrEnum).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, false, literal, true
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from .types import DecimalText

__all__ = ["as_number", "sql_bool"]


class _AsNumber(FunctionElement[Any]):
    """A decimal value as a number: CAST(x AS REAL) on SQLite, x elsewhere."""

    name = "loom_as_number"
    inherit_cache = True
    type = DecimalText()


@compiles(_AsNumber)
def _as_number_default(element: _AsNumber, compiler: SQLCompiler, **kw: Any) -> str:
    (inner,) = element.clauses
    return str(compiler.process(inner, **kw))


@compiles(_AsNumber, "sqlite")
def _as_number_sqlite(element: _AsNumber, compiler: SQLCompiler, **kw: Any) -> str:
    (inner,) = element.clauses
    return f"CAST({compiler.process(inner, **kw)} AS REAL)"


def as_number(value: Any) -> ColumnElement[Any]:
    """A decimal column, expression or Python value as a number comparable on every engine."""
    if not isinstance(value, ColumnElement):
        value = literal(value, DecimalText())
    return _AsNumber(value)


def sql_bool(value: Any) -> ColumnElement[bool]:
    """A where-clause from a Python bool (a criterion part that reads no column), or the clause
    itself."""
    if isinstance(value, ColumnElement):
        return value
    return true() if value else false()
