"""Whether a database holds the tables a service expects: the structural check a service makes at
start-up (`Service.create_schema`), and that `loom migrate status` and `loom run` reuse.

A shape is what the check compares: per table, per column, whether it is nullable and whether
the database fills it when an insert leaves it out (a server default). Types are left out: each
engine reflects its own spelling of them, and a service whose columns all exist with the right
nullability reads and writes its rows; a changed type is the migration tool's business
(`loom.migrate` compares snapshots, which keep them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import MetaData, inspect
from sqlalchemy.engine import Connection

from loom.runtime.values.errors import StartupRefused

__all__ = [
    "ColumnShape",
    "SchemaMismatch",
    "Shape",
    "differences",
    "mismatch_message",
    "read_shape",
    "shape_of",
]


@dataclass(frozen=True, slots=True)
class ColumnShape:
    nullable: bool
    server_default: bool = False


Shape = Mapping[str, Mapping[str, ColumnShape]]


class SchemaMismatch(StartupRefused):
    """The database is not the schema of the model: the service does not start on it."""

    def __init__(self, diffs: list[str]) -> None:
        super().__init__(mismatch_message(diffs))
        self.diffs = diffs


def shape_of(metadatas: Iterable[MetaData]) -> dict[str, dict[str, ColumnShape]]:
    """The shape of the tables of `metadatas`, as the service expects them."""
    return {
        table.name: {
            c.name: ColumnShape(bool(c.nullable), c.server_default is not None)
            for c in table.columns
        }
        for metadata in metadatas
        for table in metadata.tables.values()
    }


def read_shape(
    conn: Connection, tables: Iterable[str] | None = None
) -> dict[str, dict[str, ColumnShape]]:
    """The shape of the database's tables (of `tables` only, when given)."""
    inspector = inspect(conn)
    names = set(inspector.get_table_names())
    if tables is not None:
        names &= set(tables)
    if not names:
        return {}
    columns = inspector.get_multi_columns(filter_names=sorted(names))
    out: dict[str, dict[str, ColumnShape]] = {name: {} for name in names}
    for (_schema, table), cols in columns.items():
        if table in out:
            out[table] = {
                c["name"]: ColumnShape(bool(c["nullable"]), c.get("default") is not None)
                for c in cols
            }
    return out


def differences(expected: Shape, actual: Shape, *, extra_tables: bool = False) -> list[str]:
    """What stands between `actual` (the database) and `expected`, one sentence each; [] when
    they agree. A column the database has beyond `expected` counts when an insert that leaves it
    out would fail (NOT NULL with no server default), or always when `extra_tables` (drift, as
    `loom migrate status` reports it: then tables beyond `expected` count too)."""
    out: list[str] = []
    for table in sorted(expected):
        if table not in actual:
            out.append(f"table {table} is missing")
            continue
        want, have = expected[table], actual[table]
        for column in want:
            if column not in have:
                out.append(f"column {table}.{column} is missing")
            elif want[column].nullable and not have[column].nullable:
                out.append(
                    f"column {table}.{column} is NOT NULL in the database, optional in the model"
                )
            elif not want[column].nullable and have[column].nullable:
                out.append(
                    f"column {table}.{column} is nullable in the database, required in the model"
                )
        for column in have:
            if column in want:
                continue
            if extra_tables:
                out.append(f"column {table}.{column} is in the database, not in the model")
            elif not have[column].nullable and not have[column].server_default:
                out.append(
                    f"column {table}.{column} is in the database (NOT NULL, no default), "
                    "not in the model: inserts would fail"
                )
    if extra_tables:
        out += [
            f"table {t} is in the database, not in the model"
            for t in sorted(set(actual) - set(expected))
        ]
    return out


def mismatch_message(diffs: list[str]) -> str:
    lines = "\n".join(f"  - {d}" for d in diffs)
    return (
        "the database does not match the model, so the service does not start on it:\n"
        f"{lines}\n"
        "bring it up to date with `loom migrate apply MODEL.loom --database-url URL` (after "
        "`loom migrate new MODEL.loom` for a model change no migration holds yet), or in "
        "development start with `loom run MODEL.loom --migrate`"
    )
