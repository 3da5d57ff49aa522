"""Column types for generated tables: exact decimals, UTC datetimes and JSON lists, identical
on SQLite and PostgreSQL.

- `DecimalText`: NUMERIC on PostgreSQL, TEXT (the exact decimal string) on SQLite; never a float.
  A plain decimal in a unique key (`number_keys`) is stored without trailing zeros after the
  point (`12.50` as `12.5`) on both, so that the key holds one row per number on SQLite too.
  A value outside the bounds of a `decimal` (`decimals.MAX_INTEGER_DIGITS`, `MAX_SCALE`) is
  refused (`ValueNotStorable`), on every engine alike. `DecimalText(P, S)` is a `decimal(P, S)`:
  NUMERIC(P, S) on PostgreSQL, and on every engine a value that does not fit is refused before it
  reaches the database (PostgreSQL would round it), one that fits stored padded to S places.
- `BoundedText(n)`: a `string(n)`, VARCHAR(n); a longer value is refused, never truncated.
- `UtcDateTime`: TIMESTAMP WITH TIME ZONE on PostgreSQL, a fixed-width ISO-8601 UTC string on
  SQLite (sorts chronologically). Values come back timezone-aware UTC; naive input is taken as UTC.
- `JsonList`: JSONB on PostgreSQL, JSON on SQLite. Elements are stored JSON-natively: str/int/bool
  as themselves, Decimal as its exact string, date/datetime as ISO-8601 (datetimes in UTC), a
  duration (timedelta) as its ISO 8601 text, UUID as its string, enums as their value. The repository mapper rebuilds elements from the aggregate's
  `list[T]` field type, so the round trip is lossless (see `decode_list`).
- `JsonValue`: a value object (a dataclass), or a list of them, as JSON text on every engine: an
  object per value, its fields under their attribute names, each encoded like a `JsonList` element
  (so a Decimal stays its exact string), nested value objects as nested objects. Reading rebuilds
  the dataclasses from their type hints without calling their constructor, so a stored value is not
  re-validated.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from sqlalchemy import JSON, MetaData, Numeric, String, Text, UniqueConstraint
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from loom.runtime.values import decimals, times

__all__ = [
    "BoundedText",
    "DecimalText",
    "JsonList",
    "JsonValue",
    "UtcDateTime",
    "ValueNotStorable",
    "decode_list",
    "decode_value",
    "encode_list_item",
    "encode_value",
    "map_list",
    "map_list_or",
    "map_optional",
    "map_optional_list",
    "map_or",
    "number_keys",
]


class ValueNotStorable(ValueError):
    """A value the column cannot hold exactly (answered as a 422, never stored altered)."""


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def _format_utc(value: datetime) -> str:
    """Fixed-width ISO-8601 in UTC (`0005-01-01T00:00:00.000000Z`): sorts chronologically."""
    return _to_utc(value).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _parse_utc(text: str) -> datetime:
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return _to_utc(datetime.fromisoformat(text))


class DecimalText(TypeDecorator[Decimal]):
    """An exact decimal: NUMERIC on PostgreSQL, TEXT elsewhere."""

    impl = Text
    cache_ok = True

    def __init__(self, precision: int | None = None, scale: int | None = None) -> None:
        super().__init__()
        self.precision = precision
        self.scale = scale
        # set by `number_keys` for a plain decimal in a unique key: stored as its number
        self.number_key = False

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(Numeric(self.precision, self.scale, asdecimal=True))
        return dialect.type_descriptor(Text())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        value = _storable_decimal(value if isinstance(value, Decimal) else _as_decimal(value))
        if self.precision is not None and self.scale is not None:
            try:
                value = decimals.to_scale(value, self.precision, self.scale)
            except ValueError as exc:
                raise ValueNotStorable(str(exc)) from None
        elif self.number_key:
            value = _without_trailing_zeros(value)
        if dialect.name == "postgresql":
            return value
        return str(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            value = Decimal(value if isinstance(value, str) else str(value))
        return decimals.canonical(value)


def number_keys(metadata: MetaData) -> None:
    """Mark each plain `DecimalText` column of a unique constraint (or a primary key) of
    `metadata` to be stored as its number, without trailing zeros after the point. SQLite holds
    a decimal as text, and its UNIQUE compares texts: `1`, `1.0` and `1.00` would be three keys
    where PostgreSQL's NUMERIC has one. PostgreSQL stores the same number too, so that reads
    agree. A `decimal(P, S)` is one text per number already (padded to S places)."""
    for table in metadata.tables.values():
        keys = [c.columns for c in table.constraints if isinstance(c, UniqueConstraint)]
        for column in (col for cols in [*keys, table.primary_key.columns] for col in cols):
            kind = column.type
            if isinstance(kind, DecimalText) and kind.precision is None:
                kind.number_key = True


def _without_trailing_zeros(value: Decimal) -> Decimal:
    """`value` with no zeros after the point's last significant digit (`1.0` is `1`)."""
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent >= 0:
        return value
    value = value.normalize(decimals.ARITHMETIC)
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    return value.quantize(Decimal(1), context=decimals.ARITHMETIC) if exponent > 0 else value


def _storable_decimal(value: Decimal) -> Decimal:
    """`value` in canonical form, or ValueNotStorable when it is outside the bounds of a `decimal`
    (`decimals.MAX_INTEGER_DIGITS` / `MAX_SCALE`): refused, never stored rounded."""
    try:
        return decimals.fit(value)
    except ValueError as exc:
        raise ValueNotStorable(str(exc)) from None


def _as_decimal(value: Any) -> Decimal:
    if isinstance(value, float):
        raise ValueNotStorable("DecimalText refuses floats; pass a Decimal, int or str")
    try:
        return Decimal(value)
    except ArithmeticError as exc:
        raise ValueNotStorable(f"{value!r} is not a decimal") from exc


class BoundedText(TypeDecorator[str]):
    """A `string(N)`: VARCHAR(N) on PostgreSQL (and in SQLite's DDL, which does not enforce it). A
    longer value is refused (`ValueNotStorable`) on every engine, never stored truncated."""

    impl = String
    cache_ok = True

    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.max_length = length

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        if value is not None and len(value) > self.max_length:
            raise ValueNotStorable(
                f"a string of {len(value)} characters is longer than its {self.max_length}"
            )
        return value


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every engine."""

    impl = String
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import TIMESTAMP  # PostgreSQL's only

            return dialect.type_descriptor(TIMESTAMP(timezone=True))
        return dialect.type_descriptor(String(32))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        value = _to_utc(value)
        if dialect.name == "postgresql":
            return value
        return _format_utc(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return _to_utc(value)
        return _parse_utc(value)


def encode_list_item(item: Any) -> Any:
    """One list element in its JSON-native form."""
    if item is None or item is True or item is False:
        return item
    if isinstance(item, enum.Enum):
        return item.value
    if isinstance(item, (str, int)):
        return item
    if isinstance(item, Decimal):
        return str(_storable_decimal(item))
    if isinstance(item, datetime):
        return _format_utc(item)
    if isinstance(item, date):
        return item.isoformat()
    if isinstance(item, timedelta):
        return times.format_duration(item)
    if isinstance(item, UUID):
        return str(item)
    if isinstance(item, float):
        raise TypeError("JsonList refuses floats; use Decimal")
    raise TypeError(f"JsonList cannot store {type(item).__name__}")


def _decoder(item_type: Any) -> Any:
    """A function rebuilding one element of type `item_type` from its JSON form (None when the
    JSON form already is the value)."""
    if isinstance(item_type, type):
        if issubclass(item_type, enum.Enum):
            return item_type
        if issubclass(item_type, bool) or item_type in (str, int):
            return None
        if issubclass(item_type, Decimal):
            return Decimal
        if issubclass(item_type, datetime):
            return _parse_utc
        if issubclass(item_type, date):
            return date.fromisoformat
        if issubclass(item_type, timedelta):
            return times.parse_duration
        if issubclass(item_type, UUID):
            return UUID
    return None


def decode_list(item_type: Any) -> Callable[[Any], Any] | None:
    """A function turning a stored JSON list into a list of `item_type` (None: keep as is)."""
    element = _decoder(item_type)
    if element is None:
        return None

    def decode(values: list[Any] | None) -> list[Any] | None:
        if values is None:
            return None
        return [v if v is None else element(v) for v in values]

    return decode


class JsonList(TypeDecorator[list[Any]]):
    """A list stored as JSON (JSONB on PostgreSQL). `JsonList(item_type)` also decodes elements
    itself; without an item type the repository mapper decodes from the field's type."""

    impl = JSON
    cache_ok = True

    def __init__(self, item_type: Any = None) -> None:
        super().__init__()
        self.item_type = item_type
        self._decode = decode_list(item_type) if item_type is not None else None

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            from sqlalchemy.dialects.postgresql import JSONB  # PostgreSQL's only

            return dialect.type_descriptor(JSONB())
        return dialect.type_descriptor(JSON())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        return [encode_list_item(v) for v in value]

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None or self._decode is None:
            return value
        return self._decode(value)

    @property
    def python_type(self) -> type:
        return list


# --------------------------------------------------------------------------------------------------
# Value objects


def encode_value(value: Any) -> Any:
    """A value object (dataclass), a list, or a plain value in its JSON-native form."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list):
        return [encode_value(v) for v in value]
    return encode_list_item(value)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def _strip(tp: Any) -> tuple[Any, bool]:
    """NewType, Annotated and `T | None` removed: (the core type, optional?)."""
    optional = False
    while True:
        if hasattr(tp, "__supertype__"):  # NewType
            tp = tp.__supertype__
            continue
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin is typing.Union or origin is types.UnionType:
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            optional = optional or len(args) != len(typing.get_args(tp))
            if len(args) == 1:
                tp = args[0]
                continue
        return tp, optional


def decode_value(tp: Any, data: Any) -> Any:
    """Rebuild a value of type `tp` from its JSON-native form (the inverse of `encode_value`).
    Dataclasses are rebuilt field by field without running `__init__` / `__post_init__`; a field
    missing from the stored object takes the dataclass default (the model grew a defaulted field)."""
    if data is None:
        return None
    core, _ = _strip(tp)
    if typing.get_origin(core) is list:
        (item,) = typing.get_args(core) or (Any,)
        return [decode_value(item, v) for v in data]
    if isinstance(core, type) and dataclasses.is_dataclass(core):
        obj = object.__new__(core)
        hints = _hints(core)
        for f in dataclasses.fields(core):
            if f.name in data:
                value = decode_value(hints.get(f.name, Any), data[f.name])
            elif f.default is not dataclasses.MISSING:
                value = f.default
            elif f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            else:
                raise ValueError(f"stored {core.__name__} has no `{f.name}`")
            object.__setattr__(obj, f.name, value)
        return obj
    convert = _decoder(core)
    return data if convert is None else convert(data)


class JsonValue(TypeDecorator[Any]):
    """A value object (or a list of them) as JSON text. `JsonValue(Money)`, `JsonValue(list[Money])`:
    the type tells how to rebuild what is read."""

    impl = Text
    cache_ok = True

    def __init__(self, value_type: Any) -> None:
        super().__init__()
        self.value_type = value_type

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        try:
            encoded = encode_value(value)
        except TypeError as exc:
            raise ValueNotStorable(str(exc)) from exc
        return json.dumps(encoded, ensure_ascii=False, separators=(",", ":"))

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        return decode_value(self.value_type, json.loads(value))


# --------------------------------------------------------------------------------------------------
# Conversions between wire models and domain values, used by generated schemas and routes: each
# maps a converter (`MoneyInput.to_domain`, `MoneyOut.from_value`) over an optional or list value.

_T = typing.TypeVar("_T")
_U = typing.TypeVar("_U")


def map_optional(value: _T | None, convert: Callable[[_T], _U]) -> _U | None:
    """`convert(value)`, or None for None."""
    return None if value is None else convert(value)


def map_list(values: list[_T], convert: Callable[[_T], _U]) -> list[_U]:
    """`convert` applied to each element."""
    return [convert(v) for v in values]


def map_optional_list(values: list[_T] | None, convert: Callable[[_T], _U]) -> list[_U] | None:
    """`convert` applied to each element, or None for None."""
    return None if values is None else [convert(v) for v in values]


def map_or(value: _T | None, convert: Callable[[_T], _U], default: Callable[[], _U]) -> _U:
    """`convert(value)`, or `default()` for None (a request member left out that has a default)."""
    return default() if value is None else convert(value)


def map_list_or(
    values: list[_T] | None, convert: Callable[[_T], _U], default: Callable[[], list[_U]]
) -> list[_U]:
    """`convert` applied to each element, or `default()` for None."""
    return default() if values is None else [convert(v) for v in values]
