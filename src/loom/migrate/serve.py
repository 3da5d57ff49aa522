"""What `loom run` asks before it serves: that the database is the schema of the model.

With a `migrations/` folder: the model must have no change its migrations do not hold; a fresh
database gets every migration applied; one behind its migrations is migrated with `--migrate`,
else refused; one that drifted from what was applied is refused. Without a folder: a fresh
database is left to the service, which creates its tables; one that differs from the model is
refused, except that `--migrate` applies additive, lossless changes directly (new tables, new
optional or defaulted columns). A refusal says what differs and the command that fixes it.

Then, whatever the folder: a database holding an enum value the model has no member for (a member
removed while rows held it) is refused, naming the values and their rows (`loom.migrate.enums`).

A deployable (or a set of contexts) is checked against its own folder, `migrations/<name>/`, the
same way: its service holds only its contexts' tables.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from sqlalchemy.engine import Connection, make_url

from loom.migrate.database import (
    DatabaseUnreachable,
    apply,
    apply_unrecorded,
    read_database,
    shape_on,
    snapshot_shape,
    status,
)
from loom.migrate.enums import Stored, count_outside, refusal, stored_outside
from loom.migrate.folder import MigrationsError, Revision, folder_for, revisions
from loom.migrate.model import service_schema
from loom.migrate.snapshot import Snapshot, model_view
from loom.migrate.tables import snapshot_of
from loom.runtime.storage.schema_check import ColumnShape, differences
from loom.serving.held import Held

__all__ = ["prepare_database"]


async def prepare_database(
    files: Sequence[Path],
    main: ModuleType,
    url: str,
    url_arg: str,
    *,
    migrate: bool,
    held: Held | None = None,
) -> list[str]:
    """Bring the database at `url` to the schema of the service `main` (of the contexts `held`),
    as far as `loom run` may (see the module's docstring); the lines to print. Raises
    MigrationsError when it may not serve (a stored enum value the model has no member for
    included), DatabaseUnreachable when the database does not answer."""
    held = held or Held()
    # what the suggested commands name: the model's files and the service's flag
    model = " ".join(str(f) for f in files) + held.args()
    current = snapshot_of(service_schema(main))
    folder = folder_for(files[0], held.name())
    revs = revisions(folder)
    stored: Stored | None = None
    if revs:
        lines = await _with_migrations(folder, revs, url, url_arg, migrate, model, current)
    else:
        lines, stored = await _without_migrations(model, url, url_arg, current, migrate=migrate)
    if stored is None:
        try:
            stored = await stored_outside(url, current)
        except Exception as exc:  # noqa: BLE001 - the check above reached it: say it the same way
            raise DatabaseUnreachable(f"cannot read the database: {exc}") from None
    said = refusal(stored, current, model, url_arg, bool(revs))
    if said is not None:
        raise MigrationsError(said)
    return lines


async def _with_migrations(
    folder: Path,
    revs: list[Revision],
    url: str,
    url_arg: str,
    migrate: bool,
    model: str,
    current: Snapshot,
) -> list[str]:
    # the diff engine only with a folder: a model without one starts without loading it
    from loom.migrate.diff import diff

    head = revs[-1]
    # an open expand's kept columns are the database's, not the model's
    pending_change = diff(model_view(head.snapshot()), current)
    if pending_change:
        lines = "\n".join(f"  - {s.describe()}" for s in pending_change)
        raise MigrationsError(
            f"the model has changes no migration in {folder} holds:\n{lines}\n"
            f"write the migration with `loom migrate new {model}`, then start again"
        )
    state = await status(url, revs)
    if state.drift:
        lines = "\n".join(f"  - {d}" for d in state.drift)
        raise MigrationsError(
            f"the database has drifted from migration {state.applied[-1]}:\n{lines}\n"
            f"see `loom migrate status {model}{url_arg}`; make the database match, or change the "
            "model and write a migration for it"
        )
    if not state.pending:
        return []
    fresh = not state.applied and not state.unrecorded_tables
    if not fresh and not migrate:
        names = ", ".join(r.name for r in state.pending)
        where = f"at {state.applied[-1]}" if state.applied else "not under migrations yet"
        raise MigrationsError(
            f"the database is behind its model ({where}; pending: {names})\n"
            f"apply them with `loom migrate apply {model}{url_arg}`, or start with "
            "`loom run ... --migrate`"
        )
    done = await apply(url, revs)
    out = [f"  migrations: baseline {name} (the tables were there)" for name in done.baselined]
    return out + [f"  migrations: applied {name}" for name in done.applied]


async def _without_migrations(
    model: str, url: str, url_arg: str, current: Snapshot, *, migrate: bool
) -> tuple[list[str], Stored | None]:
    """The lines to print, and the enum values outside their members the database holds when
    they were read on the same connection as its tables (None: read them now)."""
    expected = snapshot_shape(current)

    def read(conn: Connection) -> tuple[dict[str, dict[str, ColumnShape]], list[str], Stored]:
        actual = {t: cols for t, cols in shape_on(conn).items() if t in expected}
        diffs = differences(expected, actual) if actual else []
        if not actual or diffs:
            return actual, diffs, {}  # none of its tables, so none of its rows; or refused
        try:
            return actual, diffs, count_outside(conn, current)
        except Exception as exc:  # noqa: BLE001 - its tables were read: say it as the others
            raise DatabaseUnreachable(f"cannot read the database: {exc}") from None

    actual, diffs, stored = await read_database(url, read)
    if not diffs:
        return [], stored  # a fresh database (the service creates its tables), or its own
    # the lint's diagnostics come from the compiler's registry: loaded only to plan a change
    from loom.migrate.plan import make_plan
    from loom.migrate.script import render_script

    before = _as_found(current, actual)
    plan = make_plan(before, current, fallback_file=model)
    if not migrate:
        # suggest --migrate only for what it applies: the plan decides (a required column
        # without a default on a table with rows is no additive change), not the columns alone
        fix = (
            f"start with `loom run {model}{url_arg} --migrate` to add them"
            if _additive_only(expected, actual) and plan.additive
            else baseline_advice(model, url, url_arg)
        )
        lines = "\n".join(f"  - {d}" for d in diffs)
        raise MigrationsError(f"the database does not match the model:\n{lines}\n{fix}")
    if not plan.additive:
        lines = "\n".join(f"  - {line}" for line in plan.lines())
        raise MigrationsError(
            "--migrate without a migrations folder applies only additive, lossless changes "
            f"(new tables, new optional or defaulted fields); these are not:\n{lines}\n"
            + baseline_advice(model, url, url_arg)
        )
    script = render_script("0000", None, "loom run --migrate", plan.lines(), plan.steps)
    with tempfile.TemporaryDirectory(prefix="loom-migrate-") as tmp:
        path = Path(tmp) / "run_migrate.py"
        path.write_text(script, encoding="utf-8")
        await apply_unrecorded(url, path, current)
    return [f"  --migrate: {line}" for line in plan.lines()], None


def baseline_advice(model: str, url: str, url_arg: str) -> str:
    """How to put a database created before migrations (from an older model) under them: a
    first migration written from the model now could never apply to it (docs/migrations.md#a-
    database-from-before-migrations-the-baseline)."""
    fresh = ""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        fresh = f"; or, in development, start from an empty database (delete {parsed.database})"
    return (
        "this database was created from the model as it was, before migrations: a first "
        "migration written from the model now would never apply to it. Baseline it from the "
        "model it was created with:\n"
        "  1. with the model files as they were then (`git stash`, or `git checkout <commit> -- "
        f"<files>`): `loom migrate new {model} -m baseline`\n"
        f"  2. with the model now: `loom migrate new {model} -m <the change>`\n"
        f"  3. `loom migrate apply {model}{url_arg}` (records the baseline, applies the change)\n"
        f"(docs/migrations.md#a-database-from-before-migrations-the-baseline){fresh}"
    )


def _additive_only(
    expected: dict[str, dict[str, ColumnShape]], actual: dict[str, dict[str, ColumnShape]]
) -> bool:
    for table, have in actual.items():
        want = expected[table]
        if any(c not in want or want[c].nullable != have[c].nullable for c in have):
            return False
    return True


def _as_found(current: Snapshot, actual: dict[str, dict[str, ColumnShape]]) -> Snapshot:
    """The model's snapshot cut down to what the database has: its tables, their columns (with
    the database's nullability), so that the diff to the model is what the database lacks."""
    found: Snapshot = {"format": current["format"], "tables": {}}
    for name, table in current["tables"].items():
        have = actual.get(name)
        if have is None:
            continue
        kept = copy.deepcopy(table)
        kept["columns"] = [c for c in kept["columns"] if c["name"] in have]
        for c in kept["columns"]:
            c["nullable"] = have[c["name"]].nullable
        found["tables"][name] = kept
    return found
