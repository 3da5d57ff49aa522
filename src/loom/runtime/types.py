"""Column types for generated tables: exact decimals, UTC datetimes and JSON lists, identical
on SQLite and PostgreSQL.

- `DecimalText`: NUMERIC on PostgreSQL, TEXT (the exact decimal string) on SQLite; never a float.
- `UtcDateTime`: TIMESTAMP WITH TIME ZONE on PostgreSQL, a fixed-width ISO-8601 UTC string on
  SQLite (sorts chronologically). Values come back timezone-aware UTC; naive input is taken as UTC.
- `JsonList`: JSONB on PostgreSQL, JSON on SQLite. Elements are stored JSON-natively: str/int/bool
  as themselves, Decimal as its exact string, date/datetime as ISO-8601 (datetimes in UTC), UUID as
  its string, enums as their value. The repository mapper rebuilds elements from the aggregate's
  `list[T]` field type, so the round trip is lossless (see `decode_list`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from sqlalchemy import JSON, Numeric, String, Text
from sqlalchemy.dialects.postgresql import JSONB, TIMESTAMP
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = [
    "DecimalText",
    "JsonList",
    "UtcDateTime",
    "ValueNotStorable",
    "decode_list",
    "encode_list_item",
]

# PostgreSQL NUMERIC: up to 131072 digits before the decimal point, 16383 after.
_PG_MAX_ADJUSTED = 131071
_PG_MAX_SCALE = 16383


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

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
            return dialect.type_descriptor(Numeric(asdecimal=True))
        return dialect.type_descriptor(Text())

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            value = _as_decimal(value)
        if not value.is_finite():
            raise ValueNotStorable(f"{value} is not a finite decimal")
        if dialect.name == "postgresql":
            # asyncpg's binary encoding silently wraps beyond NUMERIC's range: refuse instead
            exponent = value.as_tuple().exponent
            if value and (
                value.adjusted() > _PG_MAX_ADJUSTED
                or (isinstance(exponent, int) and exponent < -_PG_MAX_SCALE)
            ):
                raise ValueNotStorable(f"{value} is outside the range of NUMERIC")
            return value
        return str(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None or isinstance(value, Decimal):
            return value
        return Decimal(value if isinstance(value, str) else str(value))


def _as_decimal(value: Any) -> Decimal:
    if isinstance(value, float):
        raise ValueNotStorable("DecimalText refuses floats; pass a Decimal, int or str")
    try:
        return Decimal(value)
    except ArithmeticError as exc:
        raise ValueNotStorable(f"{value!r} is not a decimal") from exc


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every engine."""

    impl = String
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "postgresql":
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
        return str(item)
    if isinstance(item, datetime):
        return _format_utc(item)
    if isinstance(item, date):
        return item.isoformat()
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
