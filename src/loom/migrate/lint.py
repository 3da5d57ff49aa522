"""The lint of a migration's steps: each finding a coded diagnostic from the one registry
(`loom.lang.diagnostics`), placed on the model line of the field or aggregate the step is about
(the new model's when it still exists there, else the old model's, from the old snapshot).

Findings that block `loom migrate new`: every error (the change cannot apply to existing rows),
and the data-loss warnings unless `--allow-data-loss` (`DATA_LOSS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from loom.lang.diagnostics import Diagnostic, Span
from loom.migrate.snapshot import ColumnSnap, Snapshot, column_map, same_columns
from loom.migrate.steps import (
    TENANT_COLUMN,
    AddColumn,
    AddUnique,
    AlterColumn,
    CreateTable,
    DropColumn,
    DropTable,
    DropUnique,
    RenameColumn,
    RenameTable,
    RetireEnum,
    RewriteEnum,
    Step,
    has_default,
    is_tenant_column,
    is_widening,
    type_text,
)

__all__ = ["DATA_LOSS", "Finding", "lint", "span_at"]

DATA_LOSS = frozenset({"loom.migrate-drops-data", "loom.migrate-narrowing-type"})


@dataclass(frozen=True)
class Finding:
    step: int  # index into the steps
    diagnostic: Diagnostic
    # the span is not a line of the model as it is now: a line of the model as of the old
    # snapshot (the thing is gone), or, when no snapshot says where, the first model file
    old_model: bool = False


def span_at(place: tuple[str, int] | None, fallback: str) -> Span:
    """The span of a `file:line:column` source, as wide as the name declared there."""
    if place is not None:
        source, width = place
        file, _, rest = source.rpartition(":")
        file, _, line = file.rpartition(":")
        if file and line.isdigit() and rest.isdigit():
            return Span(file, int(line), int(rest), int(line), int(rest) + max(width, 1))
    return Span(fallback, 1, 1, 1, 1)


class _Where:
    """Where each table and column of either snapshot is in its model."""

    def __init__(self, old: Snapshot, new: Snapshot, fallback: str, old_label: str) -> None:
        self.old, self.new, self.fallback, self.old_label = old, new, fallback, old_label

    def new_span(self, table: str, column: str | None = None) -> tuple[Span, bool]:
        """The span, and whether it is not a line of the current model (see `Finding`)."""
        source = _source(self.new, table, column)
        return span_at(source, self.fallback), source is None

    def is_tenant_column(self, table: str, column: str) -> bool:
        snap = self.new["tables"].get(table)
        found = column_map(snap).get(column) if snap is not None else None
        return found is not None and is_tenant_column(found)

    def old_span(self, table: str, column: str | None = None) -> tuple[Span, bool]:
        """A line of the old model: its file is named as of the last migration, so that no
        renderer quotes the line of that number in the file as it is now."""
        source = _source(self.old, table, column)
        span = span_at(source, self.fallback)
        if source is not None:
            span = replace(span, file=f"{span.file} (as of {self.old_label})")
        return span, True


def _source(snapshot: Snapshot, table: str, column: str | None) -> tuple[str, int] | None:
    """Where the column (else the table) is declared, and the length of the name there: a
    field's line starts with its name; an aggregate's with `aggregate`."""
    snap = snapshot["tables"].get(table)
    if snap is None:
        return None
    if column is not None:
        col = column_map(snap).get(column)
        if col is not None and col["source"]:
            field = col["info"].get("field")
            return col["source"], len(field) if isinstance(field, str) else 1
    return (snap["source"], len("aggregate")) if snap["source"] else None


def _field(table: str, column: ColumnSnap) -> str:
    name = column["info"].get("field")
    where = f"{table}.{column['name']}"
    return f"field `{name}` ({where})" if isinstance(name, str) else f"column {where}"


def lint(
    steps: list[Step],
    old: Snapshot,
    new: Snapshot,
    *,
    fallback_file: str,
    old_label: str = "the last migration",
) -> list[Finding]:
    """The findings of each step, in step order."""
    where = _Where(old, new, fallback_file, old_label)
    out: list[Finding] = []

    def add(
        i: int,
        code: str,
        message: str,
        span: Span,
        label: str,
        help: str,
        *,
        old_model: bool = False,
        secondary: tuple[tuple[Span, str], ...] = (),
    ) -> None:
        diagnostic = Diagnostic.make(code, message, span, label, secondary=secondary, help=help)
        out.append(Finding(i, diagnostic, old_model))

    dropped: list[Step] = [s for s in steps if isinstance(s, DropColumn | DropTable)]
    for i, step in enumerate(steps):
        if isinstance(step, DropTable):
            span, elsewhere = where.old_span(step.table)
            add(
                i,
                "loom.migrate-drops-data",
                f"dropping table {step.table} deletes every row in it",
                span,
                "this aggregate is no longer in the model",
                "if the data must go, pass --allow-data-loss; if the aggregate was renamed, say "
                "so with `renamed from` on its new declaration",
                old_model=elsewhere,
            )
        elif isinstance(step, DropColumn):
            span, elsewhere = where.old_span(step.table, step.column["name"])
            add(
                i,
                "loom.migrate-drops-data",
                f"dropping column {step.table}.{step.column['name']} deletes its values in every row",
                span,
                "this field is no longer in the model",
                "if the values must go, pass --allow-data-loss; if the field was renamed, say "
                "so with `renamed from` on the new field",
                old_model=elsewhere,
            )
        elif isinstance(step, AddColumn) and is_tenant_column(step.column):
            span, elsewhere = where.new_span(step.table)
            add(
                i,
                "loom.migrate-tenanted-existing-table",
                f"{step.table} becomes tenanted: its existing rows have no tenant, and none can "
                "be invented for them, so the migration refuses to apply while the table has rows",
                span,
                "its context is now `tenanted`",
                "apply it to an empty table; to keep rows, copy them out, apply, and write them "
                "back through the service as each tenant (docs/migrations.md#tenanted-contexts)",
                old_model=elsewhere,
            )
        elif (
            isinstance(step, AddColumn)
            and not step.column["nullable"]
            and not has_default(step.column)
        ):
            default_expr = step.column["info"].get("default_expr")
            why = (
                f"its default `{default_expr}` is not a constant, so existing rows cannot get it"
                if isinstance(default_expr, str)
                else "existing rows have no value for it"
            )
            span, elsewhere = where.new_span(step.table, step.column["name"])
            add(
                i,
                "loom.migrate-required-without-default",
                f"the new required {_field(step.table, step.column)} cannot be added: {why}",
                span,
                "required, with no constant default",
                'give the field a constant default (such as `= 0`, `= ""` or `= false`), or '
                "make it optional (`?`)",
                old_model=elsewhere,
            )
        elif isinstance(step, AlterColumn):
            _alter(i, step, where, add)
        elif isinstance(step, AddUnique):
            _unique(i, step, where, add, steps)
        if isinstance(step, CreateTable):
            _maybe_renamed_table(i, step, dropped, where, add)
        elif isinstance(step, AddColumn):
            _maybe_renamed_column(i, step, dropped, where, add)
        if isinstance(
            step, RenameTable | RenameColumn | DropTable | DropColumn | RewriteEnum | RetireEnum
        ) or (isinstance(step, AlterColumn) and not step.compatible):
            _breaks(i, step, where, add)
    return out


def _alter(i: int, step: AlterColumn, where: _Where, add: _Add) -> None:
    span, elsewhere = where.new_span(step.table, step.new["name"])
    if step.type_changed and not is_widening(step.old, step.new):
        add(
            i,
            "loom.migrate-narrowing-type",
            f"changing {step.table}.{step.new['name']} from {type_text(step.old)} to "
            f"{type_text(step.new)} may not keep every stored value",
            span,
            f"was {type_text(step.old)}",
            "check that every stored value converts, then pass --allow-data-loss; or add a new "
            "field of the new type beside the old one",
            old_model=elsewhere,
        )
    if step.nullable_changed and not step.new["nullable"] and not has_default(step.new):
        add(
            i,
            "loom.migrate-required-without-default",
            f"the {_field(step.table, step.new)} becomes required, but existing rows may hold "
            "no value for it",
            span,
            "required, with no constant default",
            "give it a constant default (existing empty values get it), or keep it optional",
            old_model=elsewhere,
        )


def _unique(i: int, step: AddUnique, where: _Where, add: _Add, steps: Sequence[Step]) -> None:
    span, elsewhere = where.new_span(step.table, step.unique["columns"][0])
    columns = ", ".join(step.unique["columns"])
    if step.new_columns == {TENANT_COLUMN} and where.is_tenant_column(step.table, TENANT_COLUMN):
        # a key made per tenant: it applies to an empty table (the tenant column's finding)
        return
    held = set(step.unique["columns"])
    if any(
        isinstance(s, DropUnique) and s.table == step.table and set(s.unique["columns"]) <= held
        for s in steps
    ):
        # a key widened by columns (Loom's timers, per tenant): rows unique before still are
        return
    if step.new_columns:
        add(
            i,
            "loom.migrate-unique-duplicates",
            f"the unique key ({columns}) on {step.table} covers the new column(s) "
            f"{', '.join(sorted(step.new_columns))}: every existing row gets the same value",
            span,
            "unique over a column added now",
            "add the field in one migration, give each row its own value, then add the unique key "
            "in a later migration",
            old_model=elsewhere,
        )
        return
    add(
        i,
        "loom.migrate-unique-existing-rows",
        f"the unique key ({columns}) on {step.table} fails to apply if existing rows hold "
        "duplicates",
        span,
        "unique over existing rows",
        f"find them first: SELECT {columns}, count(*) FROM {step.table} GROUP BY {columns} "
        "HAVING count(*) > 1; make them distinct, then apply",
        old_model=elsewhere,
    )


def _maybe_renamed_table(
    i: int, step: CreateTable, dropped: list[Step], where: _Where, add: _Add
) -> None:
    for other in dropped:
        if isinstance(other, DropTable) and same_columns(other.snap, step.snap):
            span, elsewhere = where.new_span(step.table)
            add(
                i,
                "loom.migrate-maybe-rename",
                f"table {other.table} is dropped and {step.table}, of the same columns, added: "
                "its rows would be lost",
                span,
                "added",
                f"did you mean `renamed from`? Declare the aggregate `renamed from` its old name to "
                f"keep the rows of {other.table}",
                old_model=elsewhere,
            )
            return


def _maybe_renamed_column(
    i: int, step: AddColumn, dropped: list[Step], where: _Where, add: _Add
) -> None:
    shape = (step.column["type"], step.column["length"], step.column["nullable"])
    for other in dropped:
        if (
            isinstance(other, DropColumn)
            and other.table == step.table
            and (other.column["type"], other.column["length"], other.column["nullable"]) == shape
        ):
            old_name = other.column["info"].get("field", other.column["name"])
            span, elsewhere = where.new_span(step.table, step.column["name"])
            was, _ = where.old_span(other.table, other.column["name"])
            add(
                i,
                "loom.migrate-maybe-rename",
                f"column {step.table}.{other.column['name']} is dropped and "
                f"{step.column['name']}, of the same type, added: its values would be lost",
                span,
                "added",
                f"did you mean `renamed from`? Write `... renamed from {old_name}` on the new "
                "field to keep the values",
                old_model=elsewhere,
                secondary=((was, "dropped"),),
            )
            return


def _breaks(i: int, step: Step, where: _Where, add: _Add) -> None:
    if isinstance(step, DropTable | DropColumn):
        column = step.column["name"] if isinstance(step, DropColumn) else None
        span, elsewhere = where.old_span(step.table, column)
    else:
        column = step.new["name"] if isinstance(step, AlterColumn) else None
        if isinstance(step, RenameColumn | RewriteEnum | RetireEnum):
            column = step.column["name"]
        span, elsewhere = where.new_span(step.table, column)
    fix = (
        "on a single instance, stop the old version before applying; with replicas, do it as "
        "expand and contract: add the new shape in one release, move the data, and drop the old "
        "one in a later release (docs/migrations.md#rolling-deploys)"
    )
    if isinstance(step, RenameColumn):
        fix = (
            "on a single instance, stop the old version before applying; with replicas, write it "
            "with `loom migrate new ... --expand`, and once no replica runs the old code, "
            "`--contract` (docs/migrations.md#rolling-deploys)"
        )
    add(
        i,
        "loom.migrate-breaks-running-code",
        f"the previous code cannot run once this applies: {step.describe()}",
        span,
        "incompatible with the running code",
        fix,
        old_model=elsewhere,
    )


class _Add(Protocol):
    """The signature of `lint`'s `add` (for the helpers above)."""

    def __call__(
        self,
        i: int,
        code: str,
        message: str,
        span: Span,
        label: str,
        help: str,
        *,
        old_model: bool = False,
        secondary: tuple[tuple[Span, str], ...] = (),
    ) -> None: ...
