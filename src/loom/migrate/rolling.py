"""Expand and contract: a column rename split in two migrations for a rolling deploy
(docs/migrations.md#rolling-deploys).

The expand (`migrate new --expand`) turns each column rename of the change into an
`ExpandRename`: the new column beside the old one, filled from it, the two kept in step by a
trigger, so the previous code (reading and writing the old column) and the new code (the new one)
run together on one database. Its snapshot holds both columns (the database's schema) and records
the open expand; the model's schema is that without the kept columns (`model_view`). The contract
(`migrate new --contract`) drops what the expand kept, with whatever else the model changed since.
"""

from __future__ import annotations

import copy

from loom.migrate.diff import diff
from loom.migrate.folder import MigrationsError
from loom.migrate.snapshot import KeptColumn, Snapshot, column_map, model_view
from loom.migrate.steps import (
    AlterColumn,
    ContractRename,
    ExpandRename,
    RenameColumn,
    RewriteEnum,
    Step,
)

__all__ = ["contract_steps", "expand_steps", "expanded_snapshot", "open_expand"]


def open_expand(snapshot: Snapshot) -> str | None:
    """The revision whose expand `snapshot` still holds open, or None."""
    expand = snapshot.get("expand")
    return expand["revision"] if expand else None


def expand_steps(steps: list[Step]) -> list[Step]:
    """`steps` with each column rename as an expand. A renamed column whose type changes too, or
    whose enum values are rewritten, cannot be kept in step by copying: MigrationsError."""
    renamed = {(s.table, s.column["name"]): s for s in steps if isinstance(s, RenameColumn)}
    if not renamed:
        raise MigrationsError(
            "nothing to expand: the change renames no field (--expand splits a field rename in "
            "two migrations); write it without --expand"
        )
    out: list[Step] = []
    for step in steps:
        if isinstance(step, RenameColumn):
            out.append(ExpandRename(step.table, old=step.before, column=step.column))
            continue
        if isinstance(step, AlterColumn) and (step.table, step.new["name"]) in renamed:
            if step.type_changed:
                raise MigrationsError(
                    f"{step.table}.{step.new['name']} is renamed and changes its type: an expand "
                    "copies values as they are; rename it in one migration and change its type "
                    "in another"
                )
            continue  # the expand gives the new column its nullability
        if isinstance(step, RewriteEnum) and (step.table, step.column["name"]) in renamed:
            raise MigrationsError(
                f"{step.table}.{step.column['name']} is renamed and its enum members too: an "
                "expand copies values as they are; rename the members in another migration"
            )
        out.append(step)
    return out


def expanded_snapshot(current: Snapshot, steps: list[Step], revision: str) -> Snapshot:
    """The database's schema once the expand `steps` are applied: the model's (`current`), plus
    each kept column, optional now, and the record of the open expand."""
    out = copy.deepcopy(current)
    kept: list[KeptColumn] = []
    for step in steps:
        if not isinstance(step, ExpandRename):
            continue
        table = out["tables"][step.table]
        column = copy.deepcopy(step.old)
        column["nullable"] = True
        column["primary_key"] = False
        table["columns"].append(column)
        kept.append({"table": step.table, "old": step.old["name"], "new": step.column["name"]})
    out["expand"] = {"revision": revision, "kept": kept}
    return out


def contract_steps(old: Snapshot, current: Snapshot) -> list[Step]:
    """From the snapshot of an open expand to the model: drop what it kept (first, so that the
    rest of the change meets the model's columns only), then whatever else changed."""
    expand = old.get("expand")
    if expand is None:
        raise MigrationsError(
            "no expand is open: --contract drops what a `migrate new --expand` kept, and the "
            "last migration opened none; write the change without --contract"
        )
    steps: list[Step] = []
    for kept in expand["kept"]:
        table = current["tables"].get(kept["table"])
        if table is None or kept["new"] not in column_map(table):
            raise MigrationsError(
                f"the expand {expand['revision']} kept {kept['table']}.{kept['old']} for "
                f"{kept['new']}, which the model no longer has: contract it before changing it"
            )
        steps.append(
            ContractRename(
                kept["table"], old=kept["old"], new=kept["new"], revision=expand["revision"]
            )
        )
    return steps + diff(model_view(old), current)
