"""The snapshot of SQLAlchemy tables (`loom.migrate.snapshot`'s format): each column's type
made dialect-neutral, the `info` the generated tables carry, and where in the model each table
and column comes from."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Column, Index, MetaData, Table, UniqueConstraint
from sqlalchemy.types import TypeEngine

from loom.migrate.snapshot import FORMAT, ColumnSnap, IndexSnap, Snapshot, TableSnap

__all__ = ["NEUTRAL_TYPES", "Locate", "loom_info", "neutral_type", "snapshot_of"]

# Loom's column types by class name, with the neutral type each stores as; SQLAlchemy's own
# types keep their names
_LOOM_TYPES = {
    "DecimalText": "Decimal",
    "UtcDateTime": "DateTime",
    "JsonList": "Json",
    "JsonValue": "Text",  # a value object as JSON text
    "BoundedText": "String",
    "DurationMicros": "BigInteger",  # a duration as its microseconds
}
NEUTRAL_TYPES = frozenset(
    {"String", "Text", "BigInteger", "Integer", "Boolean", "Date", "DateTime", "Decimal", "Json"}
    | {"Uuid", "LargeBinary"}
)

# where a table or column comes from in the model (`file:line:column`), from its info
Locate = Callable[[Mapping[str, Any], Mapping[str, Any] | None], str | None]


def numeric_bound(t: TypeEngine[Any]) -> list[int] | None:
    """[P, S] of a `DecimalText(P, S)` (a `decimal(P, S)` field), None for any other type."""
    precision, scale = getattr(t, "precision", None), getattr(t, "scale", None)
    if type(t).__name__ != "DecimalText" or precision is None or scale is None:
        return None
    return [precision, scale]


def neutral_type(t: TypeEngine[Any]) -> tuple[str, int | None]:
    """The dialect-neutral name of a column type, and its length (`String(N)` only)."""
    name = type(t).__name__
    neutral = _LOOM_TYPES.get(name, name)
    if neutral not in NEUTRAL_TYPES:
        raise ValueError(f"a column of type {name} has no neutral type for snapshots")
    length = getattr(t, "length", None) if neutral == "String" else None
    return neutral, length


def loom_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """The `loom` part of a table's or column's info (what the generated tables carry)."""
    value = info.get("loom", {})
    return dict(value) if isinstance(value, Mapping) else {}


def _column(
    column: Column[Any], table_info: Mapping[str, Any], locate: Locate | None
) -> ColumnSnap:
    neutral, length = neutral_type(column.type)
    info = loom_info(column.info)
    snap: ColumnSnap = {
        "name": column.name,
        "type": neutral,
        "length": length,
        "nullable": bool(column.nullable) and not column.primary_key,
        "primary_key": bool(column.primary_key),
        "info": info,
        "source": locate(table_info, info) if locate and info else None,
    }
    bound = numeric_bound(column.type)
    if bound is not None:
        snap["numeric"] = bound
    return snap


def _table(table: Table, locate: Locate | None) -> TableSnap:
    info = loom_info(table.info)
    pk = table.primary_key
    uniques = sorted(
        (c for c in table.constraints if isinstance(c, UniqueConstraint)),
        key=lambda c: str(c.name),
    )
    indexes = sorted(table.indexes, key=lambda i: str(i.name))
    return {
        "info": info,
        "source": locate(info, None) if locate and info else None,
        "primary_key_name": pk.name if isinstance(pk.name, str) else None,
        "columns": [_column(c, info, locate) for c in table.columns],
        "unique": [
            {"name": str(c.name), "columns": [col.name for col in c.columns]} for c in uniques
        ],
        "indexes": [_index(i) for i in indexes],
    }


def _index(index: Index) -> IndexSnap:
    return {
        "name": str(index.name),
        "columns": [c.name for c in index.columns],
        "unique": bool(index.unique),
    }


def snapshot_of(metadata: MetaData | Sequence[MetaData], locate: Locate | None = None) -> Snapshot:
    """The snapshot of the tables of `metadata` (or of several, as one schema), in name order."""
    tables = (
        metadata.tables
        if isinstance(metadata, MetaData)
        else {name: t for each in metadata for name, t in each.tables.items()}
    )
    return {
        "format": FORMAT,
        "tables": {name: _table(tables[name], locate) for name in sorted(tables)},
    }
