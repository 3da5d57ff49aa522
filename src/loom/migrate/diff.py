"""The diff of two snapshots: the ordered steps that turn the old schema into the new one.

A rename is a rename only when the model says so (`renamed_from` in the info of the new table or
column, naming one the old schema has and the new one no longer does); otherwise a table or column
that went away is a drop and one that appeared is an add, and the lint asks whether a rename was
meant (`loom.migrate-maybe-rename`). The order: table renames, new tables, then per table column
renames, dropped keys and indexes, new columns, changed columns, enum rewrites and retired
members, a changed primary key, dropped columns, new keys and indexes; dropped tables last.
"""

from __future__ import annotations

from loom.migrate.snapshot import ColumnSnap, Snapshot, TableSnap, column_map, shape_of
from loom.migrate.steps import (
    AddColumn,
    AddIndex,
    AddUnique,
    AlterColumn,
    AlterPrimaryKey,
    CreateTable,
    DropColumn,
    DropIndex,
    DropTable,
    DropUnique,
    RenameColumn,
    RenameTable,
    RetireEnum,
    RewriteEnum,
    Step,
)

__all__ = ["diff"]


def _renamed_from(info: dict[str, object]) -> str | None:
    value = info.get("renamed_from")
    return value if isinstance(value, str) else None


def diff(old: Snapshot, new: Snapshot) -> list[Step]:
    """The steps from `old` to `new`; [] when they hold the same schema."""
    old_tables, new_tables = old["tables"], new["tables"]
    renames: dict[str, str] = {}  # new name -> old name
    for name, table in new_tables.items():
        source = _renamed_from(table["info"])
        if source and source in old_tables and source not in new_tables and name not in old_tables:
            renames[name] = source
    steps: list[Step] = [RenameTable(name, old=source) for name, source in sorted(renames.items())]
    for name in sorted(set(new_tables) - set(old_tables) - set(renames)):
        steps.append(CreateTable(name, snap=new_tables[name]))
    for name in sorted(new_tables):
        source = renames.get(name, name)
        if source in old_tables:
            steps += _table_steps(name, old_tables[source], new_tables[name])
    gone = set(old_tables) - set(new_tables) - set(renames.values())
    steps += [DropTable(name, snap=old_tables[name]) for name in sorted(gone)]
    return steps


def _table_steps(name: str, old: TableSnap, new: TableSnap) -> list[Step]:
    old_cols, new_cols = column_map(old), column_map(new)
    renames: dict[str, str] = {}
    for col in new["columns"]:
        source = _renamed_from(col["info"])
        if source and source in old_cols and source not in new_cols and col["name"] not in old_cols:
            renames[col["name"]] = source
    head: list[Step] = [
        RenameColumn(name, old=renames[c["name"]], column=c, before=old_cols[renames[c["name"]]])
        for c in new["columns"]
        if c["name"] in renames
    ]
    added = [c for c in new["columns"] if c["name"] not in old_cols and c["name"] not in renames]
    dropped = [
        c for c in old["columns"] if c["name"] not in new_cols and c["name"] not in renames.values()
    ]
    changed: list[Step] = []
    rewrites: list[Step] = []
    for col in new["columns"]:
        before = old_cols.get(renames.get(col["name"], col["name"]))
        if before is None:
            continue
        if (shape_of(before), before["nullable"]) != (shape_of(col), col["nullable"]):
            changed.append(AlterColumn(name, old=before, new=col))
        fresh = _enum_renames(before, col)
        if fresh:
            rewrites.append(RewriteEnum(name, column=col, renames=fresh))
        removed = _enum_removed(before, col)
        if removed:
            rewrites.append(RetireEnum(name, column=col, removed=removed))
    # keys and indexes by name and columns: a renamed table's are dropped and added again under
    # their new names (`uq_<table>_...`), so the database's names stay the snapshot's
    old_uniques = {(u["name"], *u["columns"]): u for u in old["unique"]}
    new_uniques = {(u["name"], *u["columns"]): u for u in new["unique"]}
    old_indexes = {(i["name"], str(i["unique"]), *i["columns"]): i for i in old["indexes"]}
    new_indexes = {(i["name"], str(i["unique"]), *i["columns"]): i for i in new["indexes"]}
    # a nullable column may hold NULL in every row: a unique key allows that
    added_names = frozenset(c["name"] for c in added if not c["nullable"])
    old_pk = tuple(c["name"] for c in old["columns"] if c["primary_key"])
    new_pk = tuple(c["name"] for c in new["columns"] if c["primary_key"])
    keyed: list[Step] = []
    if old_pk != new_pk:  # after the new columns it may cover, before the dropped ones
        keyed.append(
            AlterPrimaryKey(name, old_pk, new_pk, old["primary_key_name"], new["primary_key_name"])
        )
    return [
        *head,
        *(
            DropUnique(name, unique=u)
            for k, u in sorted(old_uniques.items())
            if k not in new_uniques
        ),
        *(DropIndex(name, index=i) for k, i in sorted(old_indexes.items()) if k not in new_indexes),
        *(AddColumn(name, column=c) for c in added),
        *changed,
        *rewrites,
        *keyed,
        *(DropColumn(name, column=c) for c in dropped),
        *(
            AddUnique(name, unique=u, new_columns=added_names & set(u["columns"]))
            for k, u in sorted(new_uniques.items())
            if k not in old_uniques
        ),
        *(AddIndex(name, index=i) for k, i in sorted(new_indexes.items()) if k not in old_indexes),
    ]


def _enum_renames(old: ColumnSnap, new: ColumnSnap) -> tuple[tuple[str, str], ...]:
    """The enum member renames the new column states that the old one did not yet."""
    now = new["info"].get("enum_renamed") or {}
    before = old["info"].get("enum_renamed") or {}
    if not isinstance(now, dict):
        return ()
    return tuple(sorted((str(a), str(b)) for a, b in now.items() if before.get(a) != b))


def _enum_removed(old: ColumnSnap, new: ColumnSnap) -> tuple[str, ...]:
    """The members the old column's enum had that the new one's has not, renamed ones aside
    (unknown, (), for a snapshot from before the snapshots listed them)."""
    before, now = old["info"].get("members"), new["info"].get("members")
    if not isinstance(before, list) or not isinstance(now, list):
        return ()
    renamed = new["info"].get("enum_renamed") or {}
    return tuple(m for m in before if m not in now and m not in renamed)
