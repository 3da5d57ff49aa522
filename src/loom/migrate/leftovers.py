"""`loom.leftover-rename`: a `renamed from` that no migration still needs (issue 11 §2).

A rename of the schema is applied once, by the migration whose diff saw it: the next `migrate new`
diffs the model against the LAST snapshot, and a database behind it gets the rename from the
scripts, not from the model. So once the last migration's snapshot already has the new name and no
longer the old one, the clause does nothing any more, and `loom check` says it may go.

Precisely, for each `renamed from OLD` in the model, against the last snapshot of the model's
`migrations/` folder:
- an aggregate: a table comes from the new name (its `origin`) and none from the old one;
- a field of an aggregate, a workflow's state or a projection: the table of its declaration has a
  column for the new field and none for the old one;
- an enum member: a column of the snapshot records the member rewrite (`enum_renamed`), which is
  written only by the migration that ran it and the ones after it.
Events and event fields are never flagged: a retained `log` channel or a dead letter may hold an
event under its old name forever, and the clause is what still decodes it
(docs/migrations.md#events-in-flight). No `migrations/` folder, or one that cannot be read: no
finding (the migration commands report a broken folder).

A model whose deployables have folders of their own (`migrations/<deployable>/`) has one last
snapshot per folder: a clause is left over when some folder's last snapshot has the new name and
not the old one, and no folder's still has the old one (a deployable behind still needs it); an
enum member's, only when every folder's last snapshot records the rewrite. A declared deployable
holding the clause's context with no migrations of its own keeps every clause of that context: its
database (`loom up`'s, `loom run --deployable`'s) was created from the model as it was then, and
its first migrations (a baseline of that model, then the change) still need the rename.

Reads the snapshot as plain JSON (`loom.migrate.folder`): `loom check` imports neither SQLAlchemy
nor Alembic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from loom.lang.diagnostics import Diagnostic, Span
from loom.migrate.folder import MigrationsError, folder_for, named_folders, revisions
from loom.migrate.snapshot import Snapshot
from loom.model import ir, naming

__all__ = ["leftover_renames"]

CODE = "loom.leftover-rename"


def leftover_renames(
    model: ir.Model, first_file: Path, sources: Mapping[str, str]
) -> list[Diagnostic]:
    """The leftover `renamed from` clauses of `model`, against the last migration beside
    `first_file`; [] without migrations."""
    try:
        lasts = []
        for folder in (folder_for(first_file), *named_folders(first_file)):
            existing = revisions(folder)
            if existing:
                label = existing[-1].script.relative_to(folder_for(first_file)).with_suffix("")
                lasts.append((str(label), _Snapshot(existing[-1].snapshot())))
    except (MigrationsError, OSError):
        return []
    if not lasts:
        return []
    found = _Lasts(lasts)
    unmigrated = _unmigrated_contexts(model, first_file)
    out: list[Diagnostic] = []

    def flag(origin: ir.Origin, old: str, now: str, before: str, last: str) -> None:
        span = _clause(origin, old, sources)
        if span is None:
            return
        out.append(
            Diagnostic.make(
                CODE,
                f"`renamed from {old}` is left over: the last migration ({last}) already has "
                f"{now} and no longer {before}, so no database migrated by its folder still "
                "needs the rename",
                span,
                "applied by an earlier migration",
                help=f"remove `renamed from {old}`",
            )
        )

    for context in model.contexts:
        c = context.name
        if c in unmigrated:
            continue
        for agg in context.aggregates:
            old = agg.renamed_from
            if old and (last := found.renamed(f"{c}.{agg.name}", f"{c}.{old}")):
                now = f"the aggregate's table `{found.table_of(f'{c}.{agg.name}')}`"
                flag(agg.origin, old, now, f"a table of `{old}`", last)
        holders = [
            *((f"{c}.{a.name}", a.fields) for a in context.aggregates),
            *((f"{c}.{w.name}", w.state) for w in context.workflows),
            *((f"{c}.{p.name}", p.fields) for p in context.projections),
        ]
        for origin, fields in holders:
            for f in fields:
                old = f.renamed_from
                if old and (last := found.renamed(origin, old, f.name)):
                    # the columns by their names, not the fields' (`claimant_name`)
                    now = f"column `{found.column_of(origin, f.name)}` (field `{f.name}`)"
                    flag(f.origin, old, now, f"`{naming.column_name(old)}`", last)
        for enum in context.enums:
            for member, old in enum.renamed_from:
                if all((old, member) in snap.enum_rewrites for _, snap in lasts):
                    now = f"the stored member `{member}`"
                    flag(enum.origin, old, now, f"`{old}`", lasts[0][0])
    return sorted(out, key=lambda d: (d.span.file, d.span.line, d.span.column))


def _unmigrated_contexts(model: ir.Model, first_file: Path) -> set[str]:
    """The contexts held by a declared deployable whose folder has no migration yet."""
    out: set[str] = set()
    for deployable in model.deployables:
        try:
            empty = not revisions(folder_for(first_file, naming.snake(deployable.name)))
        except (MigrationsError, OSError):
            empty = False  # a broken folder: the migration commands say so
        if empty:
            out |= set(deployable.contexts)
    return out


class _Snapshot:
    """What the snapshot says of the model's names."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.fields: dict[str, dict[str, str]] = {}  # origin -> field -> its column
        self.tables: dict[str, str] = {}  # origin -> its table
        self.enum_rewrites: set[tuple[str, str]] = set()
        for name, table in snapshot["tables"].items():
            origin = table["info"].get("origin")
            names: dict[str, str] = {}
            if isinstance(origin, str):
                names = self.fields.setdefault(origin, {})
                self.tables.setdefault(origin, name)
            for column in table["columns"]:
                field = column["info"].get("field")
                if isinstance(field, str):
                    names[field] = column["name"]
                rewrites = column["info"].get("enum_renamed")
                if isinstance(rewrites, dict):
                    self.enum_rewrites |= {(str(a), str(b)) for a, b in rewrites.items()}

    def has_table(self, origin: str) -> bool:
        return origin in self.fields

    def has_field(self, origin: str, field: str) -> bool:
        return field in self.fields.get(origin, ())


class _Lasts:
    """The last snapshot of each migrations folder, by its label (`0002_note`, `front/0002_note`)."""

    def __init__(self, lasts: list[tuple[str, _Snapshot]]) -> None:
        self.lasts = lasts

    def table_of(self, origin: str) -> str:
        return next((s.tables[origin] for _, s in self.lasts if origin in s.tables), origin)

    def column_of(self, origin: str, field: str) -> str:
        found = (s.fields.get(origin, {}).get(field) for _, s in self.lasts)
        return next((c for c in found if c is not None), field)

    def renamed(self, origin: str, old: str, field: str | None = None) -> str | None:
        """The label of a last snapshot that has the new name (a table from `origin`, or its
        column of `field`) and not the old one, when no last snapshot still has the old one;
        `old` is a table's origin, or with `field` the field's old name."""

        def has(snap: _Snapshot, new: bool) -> bool:
            if field is None:
                return snap.has_table(origin if new else old)
            return snap.has_field(origin, field if new else old)

        if any(has(snap, new=False) for _, snap in self.lasts):
            return None
        return next((label for label, snap in self.lasts if has(snap, new=True)), None)


_SEARCH_LIMIT = 4000  # characters after a declaration's start within which its clause is


def _clause(origin: ir.Origin, old: str, sources: Mapping[str, str]) -> Span | None:
    """The span of `renamed from OLD` at or after `origin` in its file: the IR keeps where a
    declaration starts (an enum member's, where its enum does), and the clause follows."""
    text = sources.get(origin.file)
    if text is None:
        return None
    lines = text.splitlines(keepends=True)
    if origin.line > len(lines):
        return None
    start = sum(len(line) for line in lines[: origin.line - 1]) + origin.column - 1
    pattern = re.compile(rf"\brenamed\s+from\s+{re.escape(old)}\b")
    m = pattern.search(text, start, start + _SEARCH_LIMIT)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    end_line = text.count("\n", 0, m.end()) + 1
    end_column = m.end() - (text.rfind("\n", 0, m.end()) + 1) + 1
    return Span(origin.file, line, column, end_line, end_column, m.start(), m.end())
