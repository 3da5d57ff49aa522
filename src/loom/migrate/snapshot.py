"""Snapshots: a plain JSON description of a service's schema, written beside each migration.

The next `loom migrate new` diffs the model against the last snapshot, and `loom migrate status`
checks the database against the snapshot of the last migration applied. Types are dialect-neutral
(`String`, `Text`, `BigInteger`, `Integer`, `Boolean`, `Date`, `DateTime`, `Decimal`, `Json`,
`Uuid`, `LargeBinary`), with a length for `String(N)` and a `numeric: [P, S]` for a `decimal(P, S)`
(absent otherwise, so older snapshots read unchanged); each table and column keeps the `info`
the generated tables carry (`info={"loom": {...}}`: origin, field, renamed_from, default ...) and,
when the model says where it comes from, its `source` (`file:line:column`).

This module is the format (and needs no SQLAlchemy: `loom check` loads it with the CLI);
`loom.migrate.tables` takes the snapshot of a MetaData.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NotRequired, TypedDict

FORMAT = 1


class ColumnSnap(TypedDict):
    name: str
    type: str
    length: int | None
    numeric: NotRequired[list[int]]  # [precision, scale] of a `decimal(P, S)`
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


class KeptColumn(TypedDict):
    """A column an expand kept beside the one renamed from it (`migrate new --expand`)."""

    table: str
    old: str
    new: str


class ExpandSnap(TypedDict):
    """An open expand: the revision that opened it and what it kept, until the contract."""

    revision: str
    kept: list[KeptColumn]


class Snapshot(TypedDict):
    format: int
    tables: dict[str, TableSnap]
    # present from the migration that opened an expand until the one that contracts it
    expand: NotRequired[ExpandSnap]
    # the model's events and their fields (`loom.migrate.events`), for the check of stored events;
    # absent from snapshots written before it, which stay readable
    events: NotRequired[dict[str, Any]]


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


def model_view(snapshot: Snapshot) -> Snapshot:
    """The schema the model of `snapshot` has: without the columns an open expand keeps for the
    previous code (the database has them, the model no longer does)."""
    expand = snapshot.get("expand")
    out: Snapshot = {"format": snapshot["format"], "tables": dict(snapshot["tables"])}
    if expand is None:
        return out
    for kept in expand["kept"]:
        table = out["tables"].get(kept["table"])
        if table is not None:
            columns = [c for c in table["columns"] if c["name"] != kept["old"]]
            out["tables"][kept["table"]] = {**table, "columns": columns}
    return out


def numeric_of(column: ColumnSnap) -> tuple[int, int] | None:
    """(P, S) of a `decimal(P, S)` column, None for any other."""
    bound = column.get("numeric")
    return (bound[0], bound[1]) if bound else None


def shape_of(column: ColumnSnap) -> tuple[str, int | None, tuple[int, int] | None]:
    """What a column's type is: its neutral type, length and numeric bound."""
    return column["type"], column["length"], numeric_of(column)


def column_map(table: TableSnap) -> dict[str, ColumnSnap]:
    return {c["name"]: c for c in table["columns"]}


def same_columns(a: TableSnap, b: TableSnap) -> bool:
    """Whether two tables hold the same columns, by name, type and nullability (a rename's test)."""
    shape = [(c["name"], shape_of(c), c["nullable"], c["primary_key"]) for c in a["columns"]]
    other = [(c["name"], shape_of(c), c["nullable"], c["primary_key"]) for c in b["columns"]]
    return sorted(shape) == sorted(other)
