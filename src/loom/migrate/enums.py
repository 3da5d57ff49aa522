"""Stored enum values the model has no member for (issue 26 §5.1): counted in the database, and
what `loom migrate new` and `loom run` do about them (docs/migrations.md#removing-an-enum-member).

A column that holds one enum value carries its enum and members in the snapshot (`info.enum`,
`info.members`). A member removed from the model (not renamed) is a `RetireEnum` step; the rows
that still hold it are counted, and `migrate new` refuses the change while some do
(`loom.migrate-enum-member-in-use`), unless `--rewrite 'Enum.Old -> New'` says which member
replaces it (the revision then rewrites those rows). Whatever the counts, the revision checks
again when it applies (`guards.members_only`): rows written meanwhile refuse it. `loom run`
refuses a database holding a value outside its model's members (`refusal`).

The database is read, never written; a SQLite file that is not there yet holds no rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import ColumnClause, MetaData, column, func, inspect, select, table
from sqlalchemy.engine import Connection, make_url

from loom.migrate.folder import MigrationsError
from loom.migrate.snapshot import ColumnSnap, Snapshot
from loom.runtime import Service

if TYPE_CHECKING:  # the compiler's diagnostics and the steps: `loom run`'s check does without them
    from loom.migrate.lint import Finding
    from loom.migrate.steps import RetireEnum, Step

__all__ = [
    "CODE",
    "Rewrite",
    "Stored",
    "count_outside",
    "enum_findings",
    "missing_sqlite_file",
    "parse_rewrite",
    "refusal",
    "stored_outside",
    "with_retired",
]

CODE = "loom.migrate-enum-member-in-use"

# (table, column) -> stored value outside the members -> rows holding it
Stored = dict[tuple[str, str], dict[str, int]]

_SHOWN = 5


@dataclass(frozen=True)
class Rewrite:
    """`--rewrite 'ClaimStatus.Rejected -> Withdrawn'`: the rows of every column of that enum
    holding `old` get `new`. `enum` is the enum's name, or `Context.Enum`."""

    enum: str
    old: str
    new: str

    def matches(self, enum: object) -> bool:
        return isinstance(enum, str) and (enum == self.enum or enum.endswith(f".{self.enum}"))


_REWRITE = re.compile(r"^\s*([A-Za-z_][\w.]*)\.([A-Za-z_]\w*)\s*->\s*([A-Za-z_]\w*)\s*$")


def parse_rewrite(text: str) -> Rewrite:
    """A `--rewrite` value; ValueError with the spelling expected."""
    m = _REWRITE.match(text)
    if m is None:
        raise ValueError(
            f"--rewrite {text!r}: expected `Enum.Old -> New` (e.g. 'ClaimStatus.Rejected -> "
            "Withdrawn'): the rows holding the removed member Old get the member New"
        )
    return Rewrite(m.group(1), m.group(2), m.group(3))


def _enum_columns(snapshot: Snapshot) -> list[tuple[str, ColumnSnap, list[str]]]:
    return [
        (name, c, [str(m) for m in c["info"]["members"]])
        for name, t in sorted(snapshot["tables"].items())
        for c in t["columns"]
        if isinstance(c["info"].get("members"), list)
    ]


async def stored_outside(url: str, snapshot: Snapshot) -> Stored:
    """The values outside their enum's members that the enum columns of `snapshot` hold in the
    database at `url`, with their row counts; {} for a SQLite file not there yet. Raises the
    driver's error when the database does not answer (the callers say it their way)."""
    if not _enum_columns(snapshot) or missing_sqlite_file(url):
        return {}
    service = Service.from_url(url, MetaData())
    try:
        async with service.engine.connect() as conn:
            return await conn.run_sync(lambda sync: count_outside(sync, snapshot))
    finally:
        await service.dispose()


def count_outside(conn: Connection, snapshot: Snapshot) -> Stored:
    """`stored_outside` on a connection open already."""
    columns = _enum_columns(snapshot)
    return _count(conn, columns) if columns else {}


def missing_sqlite_file(url: str) -> bool:
    """Whether `url` names a SQLite file not there yet (reading it would create it)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return False
    database = parsed.database
    return not database or database == ":memory:" or not Path(database).is_file()


def _count(conn: Connection, columns: list[tuple[str, ColumnSnap, list[str]]]) -> Stored:
    inspector = inspect(conn)
    present = set(inspector.get_table_names())
    out: Stored = {}
    for name, col, members in columns:
        if name not in present:
            continue
        if col["name"] not in {c["name"] for c in inspector.get_columns(name)}:
            continue  # added by the migration not applied yet: nothing stored in it
        value: ColumnClause[str] = column(col["name"])
        query = (
            select(value, func.count())
            .select_from(table(name))
            .where(value.is_not(None), value.not_in(members))
            .group_by(value)
            .order_by(value)
        )
        found = {str(v): int(n) for v, n in conn.execute(query).all()}
        if found:
            out[(name, col["name"])] = found
    return out


def with_retired(
    steps: list[Step], new: Snapshot, stored: Stored, rewrites: list[Rewrite]
) -> list[Step]:
    """`steps` with the `--rewrite`s in the `RetireEnum` steps they are for, and a `RetireEnum`
    for each column whose stored values are outside its members with no step about them (its
    last snapshot did not list the members yet). MigrationsError for a rewrite to a member the
    enum does not have, or one no retired member needs."""
    from loom.migrate.steps import RetireEnum, RewriteEnum

    enum_of = {(t, c["name"]): (c, members) for t, c, members in _enum_columns(new)}
    out: list[Step] = []
    retired: set[tuple[str, str]] = set()
    # members the model renames: this migration's rewrite, or an earlier one's (pending on a
    # database behind its folder) moves their rows
    renamed = {
        (s.table, s.column["name"], a)
        for s in steps
        if isinstance(s, RewriteEnum)
        for a, _ in s.renames
    } | {
        (t, c["name"], str(a))
        for t, c, _ in _enum_columns(new)
        for a in (c["info"].get("enum_renamed") or {})
    }
    for step in steps:
        if isinstance(step, RetireEnum):
            retired.add((step.table, step.column["name"]))
        out.append(_rewritten(step, rewrites) if isinstance(step, RetireEnum) else step)
    for (name, col_name), values in sorted(stored.items()):
        held = tuple(v for v in values if (name, col_name, v) not in renamed)
        if (name, col_name) in retired or not held or (name, col_name) not in enum_of:
            continue
        col, _ = enum_of[(name, col_name)]
        out.append(_rewritten(RetireEnum(name, column=col, removed=held), rewrites))
    used = {
        (s.column["info"].get("enum"), a)
        for s in out
        if isinstance(s, RetireEnum)
        for a, _ in s.rewrites
    }
    for r in rewrites:
        members = next(
            (m for _, c, m in _enum_columns(new) if r.matches(c["info"].get("enum"))), None
        )
        if members is None:
            raise MigrationsError(
                f"--rewrite {r.enum}.{r.old}: no column of the model holds enum {r.enum}"
            )
        if r.new not in members:
            raise MigrationsError(
                f"--rewrite {r.enum}.{r.old} -> {r.new}: {r.enum} has no member {r.new} (its "
                f"members: {', '.join(members)})"
            )
        if not any(r.matches(enum) and old == r.old for enum, old in used):
            raise MigrationsError(
                f"--rewrite {r.enum}.{r.old}: {r.old} is not a member this migration removes "
                f"from {r.enum}, nor a value its rows hold"
            )
    return out


def _rewritten(step: RetireEnum, rewrites: list[Rewrite]) -> RetireEnum:
    enum = step.column["info"].get("enum")
    pairs = tuple((r.old, r.new) for r in rewrites if r.matches(enum) and r.old in step.removed)
    return replace(step, rewrites=pairs) if pairs else step


def enum_findings(steps: list[Step], stored: Stored, *, fallback_file: str) -> list[Finding]:
    """A `loom.migrate-enum-member-in-use` error per retired member rows still hold, that no
    rewrite replaces."""
    from loom.lang.diagnostics import Diagnostic
    from loom.migrate.lint import Finding, span_at
    from loom.migrate.steps import RetireEnum

    out = []
    for i, step in enumerate(steps):
        if not isinstance(step, RetireEnum):
            continue
        values = stored.get((step.table, step.column["name"]), {})
        rewritten = dict(step.rewrites)
        held = {v: n for v, n in values.items() if v in step.removed and v not in rewritten}
        if not held:
            continue
        enum = str(step.column["info"].get("enum", "the enum")).rpartition(".")[2]
        field = step.column["info"].get("field", step.column["name"])
        counts = ", ".join(f"{n} row(s) hold '{v}'" for v, n in held.items())
        first = next(iter(held))
        source = step.column["source"]
        span = span_at((source, len(str(field))) if source else None, fallback_file)
        diagnostic = Diagnostic.make(
            CODE,
            f"the member(s) {', '.join(held)} of {enum} are removed, but {counts} in "
            f"{step.table}.{step.column['name']}: every read of those rows would fail",
            span,
            f"holds {enum}",
            help=(
                f"if a member replaces it, say so: `NewMember renamed from {first}` in {enum}; or "
                f"rewrite the rows in this migration: `loom migrate new ... --rewrite "
                f"'{enum}.{first} -> <a member of {enum}>'`; or change those rows through the "
                f"service first (docs/migrations.md#removing-an-enum-member)"
            ),
        )
        out.append(Finding(i, diagnostic, source is None))
    return out


def refusal(
    stored: Stored, snapshot: Snapshot, model: str, url_arg: str, migrations: bool
) -> str | None:
    """What `loom run` says of a database holding values outside their enum's members (None
    when it holds none): each column, its values and rows, and the fix (`model`: the files and
    flags the suggested commands name; `migrations`: whether the service has a folder of them)."""
    if not stored:
        return None
    enums = {(t, c["name"]): str(c["info"].get("enum", "?")) for t, c, _ in _enum_columns(snapshot)}
    lines = []
    for (name, col_name), values in sorted(stored.items()):
        shown = list(values.items())[:_SHOWN]
        said = ", ".join(f"'{v}' ({n} row(s))" for v, n in shown)
        more = len(values) - len(shown)
        said += f" and {more} more value(s)" if more > 0 else ""
        enum = enums.get((name, col_name), "?").rpartition(".")[2]
        lines.append(f"  - {name}.{col_name} holds {said}, which {enum} has no member for")
    (name, col_name), values = min(stored.items())
    enum = enums.get((name, col_name), "?").rpartition(".")[2]
    if migrations:
        fix = (
            f"rewrite those rows in a migration: `loom migrate new {model} --rewrite "
            f"'{enum}.{next(iter(values))} -> <a member of {enum}>'`, then `loom migrate apply "
            f"{model}{url_arg}`; or bring the member back into the model"
        )
    else:
        fix = (
            "bring the member back into the model and change those rows through the service "
            "before removing it again (or put the database under migrations, whose `--rewrite` "
            "rewrites them)"
        )
    return (
        "the database holds enum values the model has no member for: every read of those rows "
        "would fail, so the service does not start on it:\n"
        + "\n".join(lines)
        + f"\n{fix} (docs/migrations.md#removing-an-enum-member)"
    )
