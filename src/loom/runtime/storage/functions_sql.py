"""The built-in functions a criterion computes in SQL (`length`, `contains`, `startsWith`,
`lower`, `upper`, `trim`, `year`, `month`, `day`; `loom.model.builtins`), answering what
`loom.runtime.values.functions` answers in memory, on both engines:

- `length`: SQL's `length` of text counts characters (code points) on SQLite and PostgreSQL, as
  Python's `len` does.
- `contains` / `startsWith` compare exactly, case and all: `instr` (SQLite) or `strpos`
  (PostgreSQL), and `substr(s, 1, length(p)) = p`. Not `LIKE`, which ignores ASCII case on SQLite
  and would read `%` and `_` in the value as wildcards.
- `trim` removes `functions.WHITESPACE` on both ends (SQLite `trim(s, chars)`, PostgreSQL
  `btrim(s, chars)`).
- `lower` / `upper`: on SQLite Python's own (`loom_lower`, `loom_upper`, installed with the
  decimal functions), since SQLite's fold only ASCII; on PostgreSQL its `lower` / `upper`, which
  fold by the database's locale (docs/language.md, "Built-in functions", says where they differ).
- `year` / `month` / `day`: SQLite stores a date as `YYYY-MM-DD` and a datetime as fixed-width
  UTC text (`types.UtcDateTime`), so a part is a fixed slice of the text; PostgreSQL extracts it
  from a `date`, or from a `timestamptz` read in UTC (not the session's time zone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Boolean, ColumnElement, Integer, Text, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeEngine

from loom.runtime.values import functions
from loom.runtime.values.types import UtcDateTime

__all__ = [
    "SQLITE_TEXT_FUNCTIONS",
    "contains",
    "day",
    "length",
    "lower",
    "month",
    "starts_with",
    "trim",
    "upper",
    "year",
]


class _SqlFunction(FunctionElement[Any]):
    """One built-in; a subclass per function, each with its SQL per engine: templates over the
    arguments' SQL (`{0}`, `{1}`)."""

    inherit_cache = True
    type: TypeEngine[Any] = Text()
    postgresql = ""
    sqlite = ""


def _function(name: str, result: TypeEngine[Any], postgresql: str, sqlite: str) -> Any:
    attrs = {"inherit_cache": True, "type": result, "postgresql": postgresql, "sqlite": sqlite}
    return type(f"_Sql_{name}", (_SqlFunction,), attrs)


def _part(name: str, field: str, start: int, size: int) -> tuple[Any, Any]:
    """A date part, of a date and of a datetime (read in UTC on PostgreSQL)."""
    sqlite = f"CAST(substr({{0}}, {start}, {size}) AS INTEGER)"
    of_date = f"CAST(EXTRACT({field} FROM {{0}}) AS INTEGER)"
    of_utc = f"CAST(EXTRACT({field} FROM ({{0}}) AT TIME ZONE 'UTC') AS INTEGER)"
    return (
        _function(name, Integer(), of_date, sqlite),
        _function(f"{name}_utc", Integer(), of_utc, sqlite),
    )


_FUNCTIONS: dict[str, Any] = {
    "length": _function("length", Integer(), "length({0})", "length({0})"),
    "contains": _function("contains", Boolean(), "(strpos({0}, {1}) > 0)", "(instr({0}, {1}) > 0)"),
    "startsWith": _function(
        "startsWith",
        Boolean(),
        "(substr({0}, 1, length({1})) = {1})",
        "(substr({0}, 1, length({1})) = {1})",
    ),
    "lower": _function("lower", Text(), "lower({0})", "loom_lower({0})"),
    "upper": _function("upper", Text(), "upper({0})", "loom_upper({0})"),
    "trim": _function("trim", Text(), "btrim({0}, {1})", "trim({0}, {1})"),
}
_PARTS: dict[str, tuple[Any, Any]] = {
    "year": _part("year", "YEAR", 1, 4),
    "month": _part("month", "MONTH", 6, 2),
    "day": _part("day", "DAY", 9, 2),
}


def _args(element: _SqlFunction, compiler: SQLCompiler, **kw: Any) -> list[str]:
    return [str(compiler.process(c, **kw)) for c in element.clauses]


@compiles(_SqlFunction)
def _function_sql(element: _SqlFunction, compiler: SQLCompiler, **kw: Any) -> str:
    return element.postgresql.format(*_args(element, compiler, **kw))


@compiles(_SqlFunction, "sqlite")
def _function_sqlite(element: _SqlFunction, compiler: SQLCompiler, **kw: Any) -> str:
    return element.sqlite.format(*_args(element, compiler, **kw))


def _call(name: str, *args: Any) -> ColumnElement[Any]:
    values = [a if isinstance(a, ColumnElement) else literal(a, Text()) for a in args]
    made: ColumnElement[Any] = _FUNCTIONS[name](*values)
    return made


def _date_part(name: str, at: ColumnElement[Any]) -> ColumnElement[int]:
    of_date, of_utc = _PARTS[name]
    made: ColumnElement[int] = (of_utc if isinstance(at.type, UtcDateTime) else of_date)(at)
    return made


# One per built-in, named as `values.functions` names them; the string functions take columns,
# expressions or Python strings, the date parts a date or datetime column (a part of a value that
# reads no column is computed in Python and bound).


def length(text: Any) -> ColumnElement[int]:
    return _call("length", text)


def contains(text: Any, part: Any) -> ColumnElement[bool]:
    return _call("contains", text, part)


def starts_with(text: Any, prefix: Any) -> ColumnElement[bool]:
    return _call("startsWith", text, prefix)


def lower(text: Any) -> ColumnElement[str]:
    return _call("lower", text)


def upper(text: Any) -> ColumnElement[str]:
    return _call("upper", text)


def trim(text: Any) -> ColumnElement[str]:
    return _call("trim", text, functions.WHITESPACE)


def year(at: ColumnElement[Any]) -> ColumnElement[int]:
    return _date_part("year", at)


def month(at: ColumnElement[Any]) -> ColumnElement[int]:
    return _date_part("month", at)


def day(at: ColumnElement[Any]) -> ColumnElement[int]:
    return _date_part("day", at)


def _text(fn: Callable[[str], str]) -> Callable[[str | None], str | None]:
    return lambda value: None if value is None else fn(value)


SQLITE_TEXT_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "loom_lower": (1, _text(functions.lower)),
    "loom_upper": (1, _text(functions.upper)),
}
"""The functions a criterion's string functions call on SQLite: (arity, function)."""
