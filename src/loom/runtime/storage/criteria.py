"""SQL helpers for generated criteria (`criterion Name(params) of Agg = condition`).

A criterion becomes one SQLAlchemy where-clause over the aggregate's table, built from its
parameters when called; the database filters, never Python. A criterion answers what the same
condition answers in memory, on every engine:

- Decimals (`DecimalText`) are exact. Generated code wraps each decimal operand in `as_number(x)`,
  whose type turns `+ - * / %`, unary `-` and the comparisons into the operations below instead of
  SQLAlchemy's (which would read TEXT `+` as `||`):
  - PostgreSQL: the column is NUMERIC, whose `+ - * %` and comparisons are exact already; `/` is
    computed on integers and rounded half-even to `MAX_SCALE` places, as `decimals.div` does
    (NUMERIC's own `/` keeps only about 16 digits and rounds half away from zero).
  - SQLite: a decimal is TEXT, so each operation is a deterministic function computed with Python's
    Decimal (`install_sqlite_functions`, run on every connection the runtime opens).
  Intermediate results are not held to the bounds of a `decimal` (NUMERIC has none), and a
  division by zero fails the query (a 422, as in memory).
- `int_rem(a, b)`: `%` of ints, the remainder of truncating division (the sign of the dividend),
  like `decimals.int_rem` and SQL's own `%`; a zero divisor fails the query on both engines
  (SQLite alone would answer NULL).
- `order_by=as_number(x)` sorts by the number (`sort_key`; SQLite would sort the text).
- `UtcDateTime` is a fixed-width ISO-8601 UTC string on SQLite, which sorts chronologically, so a
  plain comparison with a bound datetime (bound through the same type) is already correct.
- Enums are stored as their value strings: compare with `Status.OPEN.value` (or a StrEnum).
- A read rule (a repository filter reading `currentUser`) is built when the read runs, under the
  principal of the request or reaction: `currentUser.isSystem` and `.hasRole(…)` are bound as
  bools (`sql_bool`), `col == currentUser.id` is `subject_is(col)`, false for a principal
  without an id (anonymous, the system) as `Principal.id_is` is in memory.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlalchemy import Boolean, ColumnElement, Integer, Numeric, false, literal, true
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql import operators
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import TypeEngine

from loom.runtime.storage.functions_sql import SQLITE_TEXT_FUNCTIONS
from loom.runtime.values import decimals
from loom.runtime.values.principal import current_principal
from loom.runtime.values.types import DecimalText

__all__ = [
    "as_number",
    "install_sqlite_functions",
    "int_rem",
    "sort_key",
    "sql_bool",
    "subject_is",
    "subject_is_not",
]


class _Number(Numeric[Decimal]):
    """The type of a decimal operand in a criterion: its operators are Loom's exact ones."""

    cache_ok = True

    class comparator_factory(Numeric.Comparator[Decimal]):  # SQLAlchemy names it so
        def operate(self, op: Any, *other: Any, **kwargs: Any) -> ColumnElement[Any]:
            made = _OPERATIONS.get(op)
            if made is None:
                return super().operate(op, *other, **kwargs)
            if op is operators.neg:
                return made(self.expr)
            return made(self.expr, as_number(other[0]))

        def reverse_operate(self, op: Any, other: Any, **kwargs: Any) -> ColumnElement[Any]:
            made = _OPERATIONS.get(op)
            if made is None or op is operators.neg:
                return super().reverse_operate(op, other, **kwargs)
            return made(as_number(other), self.expr)


class _AsNumber(FunctionElement[Any]):
    """A decimal (or int) value as a `_Number` operand; it renders as the value itself."""

    name = "loom_as_number"
    inherit_cache = True
    type = _Number()


@compiles(_AsNumber)
def _as_number(element: _AsNumber, compiler: SQLCompiler, **kw: Any) -> str:
    (inner,) = element.clauses
    return str(compiler.process(inner, **kw))


class _SortKey(FunctionElement[Any]):
    """What a decimal sorts by: itself (NUMERIC) on PostgreSQL, an exact text key on SQLite."""

    name = "loom_dec_key"
    inherit_cache = True


@compiles(_SortKey)
def _sort_key(element: _SortKey, compiler: SQLCompiler, **kw: Any) -> str:
    (inner,) = element.clauses
    return str(compiler.process(inner, **kw))


@compiles(_SortKey, "sqlite")
def _sort_key_sqlite(element: _SortKey, compiler: SQLCompiler, **kw: Any) -> str:
    (inner,) = element.clauses
    return f"loom_dec_key({compiler.process(inner, **kw)})"


def sort_key(value: Any) -> Any:
    """`value` as an ORDER BY term: `as_number(x)` sorts by its number on both engines (SQLite
    would sort the text); anything else as it is."""
    if isinstance(value, _AsNumber):
        (inner,) = value.clauses
        return _SortKey(inner)
    return value


def as_number(value: Any) -> ColumnElement[Any]:
    """A decimal column, expression or Python value (an int too) as an exact decimal operand."""
    if isinstance(value, _AsNumber) or (
        isinstance(value, ColumnElement) and isinstance(value.type, _Number)
    ):
        return value
    if not isinstance(value, ColumnElement):
        value = literal(value, DecimalText())
    return _AsNumber(value)


class _Operation(FunctionElement[Any]):
    """One decimal operation; a subclass per operator, so that each caches its own SQL."""

    inherit_cache = True
    type: TypeEngine[Any] = _Number()
    sql = ""  # PostgreSQL's operator
    sqlite = ""  # the SQLite function


class _Comparison(_Operation):
    inherit_cache = True
    type = Boolean()


def _operation(base: type[_Operation], sql: str, sqlite: str) -> type[_Operation]:
    return type(
        f"_Decimal_{sqlite}", (base,), {"inherit_cache": True, "sql": sql, "sqlite": sqlite}
    )


_OPERATIONS: dict[Any, type[_Operation]] = {
    operators.add: _operation(_Operation, "+", "loom_dec_add"),
    operators.sub: _operation(_Operation, "-", "loom_dec_sub"),
    operators.mul: _operation(_Operation, "*", "loom_dec_mul"),
    operators.truediv: _operation(_Operation, "/", "loom_dec_div"),
    operators.mod: _operation(_Operation, "%", "loom_dec_rem"),
    operators.neg: _operation(_Operation, "-", "loom_dec_neg"),
    operators.lt: _operation(_Comparison, "<", "<"),
    operators.le: _operation(_Comparison, "<=", "<="),
    operators.gt: _operation(_Comparison, ">", ">"),
    operators.ge: _operation(_Comparison, ">=", ">="),
    operators.eq: _operation(_Comparison, "=", "="),
    operators.ne: _operation(_Comparison, "<>", "<>"),
}

# 1 in the last place a decimal may have: the quotient is computed in units of it
_UNITS = 10**decimals.MAX_SCALE
_UNIT = f"0.{'0' * (decimals.MAX_SCALE - 1)}1"


@compiles(_Operation)
def _operation_sql(element: _Operation, compiler: SQLCompiler, **kw: Any) -> str:
    parts = [str(compiler.process(c, **kw)) for c in element.clauses]
    if len(parts) == 1:
        return f"(-({parts[0]}))"
    a, b = parts
    if element.sql != "/":
        return f"(({a}) {element.sql} ({b}))"
    # a / b in units of _UNIT, truncated by div(), then rounded half-even as decimals.div does
    n = f"(({a}) * {_UNITS})"
    q = f"div({n}, ({b}))"
    r = f"({n} - {q} * ({b}))"
    up = f"(2 * abs({r}) > abs({b}) OR (2 * abs({r}) = abs({b}) AND mod({q}, 2) <> 0))"
    return f"(({q} + CASE WHEN {up} THEN sign({n}) * sign({b}) ELSE 0 END) * {_UNIT})"


@compiles(_Operation, "sqlite")
def _operation_sqlite(element: _Operation, compiler: SQLCompiler, **kw: Any) -> str:
    args = ", ".join(str(compiler.process(c, **kw)) for c in element.clauses)
    if isinstance(element, _Comparison):
        return f"(loom_dec_cmp({args}) {element.sqlite} 0)"
    return f"{element.sqlite}({args})"


class _IntRem(FunctionElement[int]):
    """`a % b` of ints: SQL's `%` truncates already; SQLite's answers NULL for a zero divisor."""

    name = "loom_int_rem"
    inherit_cache = True
    type = Integer()


@compiles(_IntRem)
def _int_rem_sql(element: _IntRem, compiler: SQLCompiler, **kw: Any) -> str:
    a, b = (str(compiler.process(c, **kw)) for c in element.clauses)
    return f"(({a}) % ({b}))"


@compiles(_IntRem, "sqlite")
def _int_rem_sqlite(element: _IntRem, compiler: SQLCompiler, **kw: Any) -> str:
    args = ", ".join(str(compiler.process(c, **kw)) for c in element.clauses)
    return f"loom_int_rem({args})"


def int_rem(a: Any, b: Any) -> ColumnElement[int]:
    """`a % b` of two ints (columns, expressions or Python ints), as `decimals.int_rem`."""
    a, b = (v if isinstance(v, ColumnElement) else literal(v, Integer()) for v in (a, b))
    return _IntRem(a, b)


def sql_bool(value: Any) -> ColumnElement[bool]:
    """A where-clause from a Python bool (a criterion part that reads no column), or the clause
    itself."""
    if isinstance(value, ColumnElement):
        return value
    return true() if value else false()


def subject_is(column: Any) -> ColumnElement[bool]:
    """`column == currentUser.id` for the running principal: no row matches a principal without
    an id (anonymous, the system, a token without `sub`), whatever the column holds."""
    id = current_principal().id
    return column == id if id else false()


def subject_is_not(column: Any) -> ColumnElement[bool]:
    """`column != currentUser.id`: false for a principal without an id, as `Principal.id_is_not`;
    an absent (NULL) value differs from an id, as it does in memory."""
    id = current_principal().id
    return column.is_distinct_from(id) if id else false()


# -- SQLite ---------------------------------------------------------------------------------------


def _read(value: Any) -> Decimal | None:
    """A value SQLite hands a function: a decimal's TEXT, an int, or NULL."""
    if value is None:
        return None
    if isinstance(value, float):  # never stored for a decimal; read exactly as it is anyway
        return Decimal(repr(value))
    return Decimal(value.decode() if isinstance(value, bytes) else value)


def _binary(compute: Callable[[Decimal, Decimal], Decimal]) -> Callable[[Any, Any], str | None]:
    def function(a: Any, b: Any) -> str | None:
        x, y = _read(a), _read(b)
        if x is None or y is None:
            return None
        return str(compute(x, y))

    return function


def _compare(a: Any, b: Any) -> int | None:
    x, y = _read(a), _read(b)
    if x is None or y is None:
        return None
    return (x > y) - (x < y)


def _neg(a: Any) -> str | None:
    x = _read(a)
    return None if x is None else str(-x)


# the exponent, offset so that it is never negative, in a fixed width: keys compare as text
_EXPONENT_OFFSET = 500_000_000
_EXPONENT_WIDTH = 9


def _key(a: Any) -> str | None:
    """A text that sorts (as text) where the number sorts: `0` then `1` then `2` for negative,
    zero and positive, then the exponent and the significant digits (both complemented for a
    negative number, its digits closed by `~`, so that -1.5 sorts before -1)."""
    x = _read(a)
    if x is None:
        return None
    if not x:
        return "1"
    sign, digits, _ = x.normalize(decimals.ARITHMETIC).as_tuple()
    exponent = x.adjusted() + _EXPONENT_OFFSET
    text = "".join(map(str, digits))
    if not sign:
        return f"2{exponent:0{_EXPONENT_WIDTH}d}{text}"
    flipped = "".join(str(9 - d) for d in digits)
    return f"0{2 * _EXPONENT_OFFSET - exponent:0{_EXPONENT_WIDTH}d}{flipped}~"


def _int_rem(a: Any, b: Any) -> int | None:
    if a is None or b is None:
        return None
    return decimals.int_rem(int(a), int(b))


_EXACT = decimals.ARITHMETIC

SQLITE_FUNCTIONS: dict[str, tuple[int, Callable[..., Any]]] = {
    "loom_dec_cmp": (2, _compare),
    "loom_dec_key": (1, _key),
    "loom_dec_add": (2, _binary(_EXACT.add)),
    "loom_dec_sub": (2, _binary(_EXACT.subtract)),
    "loom_dec_mul": (2, _binary(_EXACT.multiply)),
    "loom_dec_div": (2, _binary(decimals.div)),
    "loom_dec_rem": (2, _binary(decimals.rem)),
    "loom_dec_neg": (1, _neg),
    "loom_int_rem": (2, _int_rem),
    **SQLITE_TEXT_FUNCTIONS,
}
"""The functions a criterion's SQL calls on SQLite, by name: (arity, function)."""


def install_sqlite_functions(dbapi_connection: Any) -> None:
    """Register `SQLITE_FUNCTIONS` on a new SQLite connection (SQLAlchemy's `connect` event; for
    aiosqlite the adapted connection forwards to sqlite3's `create_function`). Deterministic, so
    SQLite may use them where it needs that (an index or a CHECK over one)."""
    for name, (arity, function) in SQLITE_FUNCTIONS.items():
        dbapi_connection.create_function(name, arity, function, deterministic=True)
