"""Snapshots: a plain JSON description of a service's schema, written beside each migration.

The next `loom migrate new` diffs the model against the last snapshot, and `loom migrate status`
checks the database against the snapshot of the last migration applied. Types are dialect-neutral
(`String`, `Text`, `BigInteger`, `Integer`, `Boolean`, `Date`, `DateTime`, `Decimal`, `Json`,
`Uuid`, `LargeBinary`), with a length for `String(N)`; each table and column keeps the `info`
the generated tables carry (`info={"loom": {...}}`: origin, field, renamed_from, default ...) and,
when the model says where it comes from, its `source` (`file:line:column`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict

from sqlalchemy import Column, Index, MetaData, Table, UniqueConstraint
from sqlalchemy.types import TypeEngine

FORMAT = 1


class ColumnSnap(TypedDict):
    name: str
    type: str
    length: int | None
    nullable: bool
    primary_key: bool
    info: dict[str, Any]
    source: str | None


class UniqueSnap(TypedDict):
    name: str
    columns: list[str]


class IndexSnap(TypedDict):
    name: str
    columns: list[str]
    unique: bool


class TableSnap(TypedDict):
    info: dict[str, Any]
    source: str | None
    primary_key_name: str | None
    columns: list[ColumnSnap]
    unique: list[UniqueSnap]
    indexes: list[IndexSnap]


class Snapshot(TypedDict):
    format: int
    tables: dict[str, TableSnap]


# Loom's column types by class name, with the neutral type each stores as; SQLAlchemy's own
# types keep their names
_LOOM_TYPES = {
    "DecimalText": "Decimal",
    "UtcDateTime": "DateTime",
    "JsonList": "Json",
    "JsonValue": "Text",  # a value object as JSON text
    "BoundedText": "String",
}
NEUTRAL_TYPES = frozenset(
    {"String", "Text", "BigInteger", "Integer", "Boolean", "Date", "DateTime", "Decimal", "Json"}
    | {"Uuid", "LargeBinary"}
)

# where a table or column comes from in the model (`file:line:column`), from its info
Locate = Callable[[Mapping[str, Any], Mapping[str, Any] | None], str | None]


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
    return {
        "name": column.name,
        "type": neutral,
        "length": length,
        "nullable": bool(column.nullable) and not column.primary_key,
        "primary_key": bool(column.primary_key),
        "info": info,
        "source": locate(table_info, info) if locate and info else None,
    }


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


def snapshot_of(metadata: MetaData, locate: Locate | None = None) -> Snapshot:
    """The snapshot of the tables of `metadata`, in name order."""
    return {
        "format": FORMAT,
        "tables": {name: _table(metadata.tables[name], locate) for name in sorted(metadata.tables)},
    }


def empty() -> Snapshot:
    """The schema before the first migration: no tables."""
    return {"format": FORMAT, "tables": {}}


def dumps(snapshot: Snapshot) -> str:
    return json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read(path: Path) -> Snapshot:
    """A snapshot file; ValueError when it is not one this version of Loom reads."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read the snapshot {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or "tables" not in data:
        raise ValueError(f"{path} is not a Loom schema snapshot (format {FORMAT})")
    snapshot: Snapshot = data  # type: ignore[assignment]  # checked above, written by dumps
    return snapshot


def column_map(table: TableSnap) -> dict[str, ColumnSnap]:
    return {c["name"]: c for c in table["columns"]}


def same_columns(a: TableSnap, b: TableSnap) -> bool:
    """Whether two tables hold the same columns, by name, type and nullability (a rename's test)."""
    shape = [
        (c["name"], c["type"], c["length"], c["nullable"], c["primary_key"]) for c in a["columns"]
    ]
    other = [
        (c["name"], c["type"], c["length"], c["nullable"], c["primary_key"]) for c in b["columns"]
    ]
    return sorted(shape) == sorted(other)
