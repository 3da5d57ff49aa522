"""The `loom migrate` commands (`new`, `apply`, `status`); what `loom run` checks before it serves
is `loom.cli.run.check_database`.

Exit codes: 0 done (status: up to date); 1 the model or the change is refused (errors in the
model, a finding that blocks, data loss without --allow-data-loss, a database the migrations
cannot apply to; status: pending migrations or drift); 2 the command line or the environment is
wrong (a bad URL, an unreachable database, an unreadable migrations folder).

`--deployable NAME` (or `--contexts A,B`) works on that service's migrations,
`migrations/<name>/`, and its database (`loom run --deployable`'s default, `<name>.db`).

The heavy modules are imported in the commands that use them: `loom migrate status` on an
up-to-date database loads neither the compiler nor Alembic.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from loom.build.cache import cached_build_for, reuse_build, write_cached_build
from loom.build.package import BuildError
from loom.build.sources import read_model
from loom.cli.output import fail
from loom.migrate.folder import MigrationsError, Revision, folder_for, named_folders, revisions
from loom.serving.database import default_database, safe_url
from loom.serving.held import (
    Held,
    OptionError,
    declared_deployables,
    held_for,
    refuse_unknown_held,
)

if TYPE_CHECKING:
    from loom.migrate.enums import Stored
    from loom.migrate.pending import EventCheck
    from loom.migrate.snapshot import Snapshot
    from loom.model.ir import Model


@click.group()
def migrate() -> None:
    """Migrations of the model's database: write the next one from the model, apply them, and say
    where a database stands (docs/migrations.md)."""


files_argument = click.argument(
    "files",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
    help="The model's .loom files (one model).",
)


def service_options(database_help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--database-url` (worded by `database_help`), `--deployable` and `--contexts`."""

    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        options = [
            click.option("--database-url", help=database_help),
            click.option(
                "--deployable",
                help="A declared deployable: its migrations (migrations/<deployable>/, its "
                "contexts' tables) and its database. Not with --contexts.",
            ),
            click.option(
                "--contexts",
                help="A set of contexts served apart (`loom run --contexts`): its migrations "
                "(migrations/<contexts>/) and its database.",
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return add


DEFAULT_DATABASE = (
    "The database; default: the one `loom run` uses, a SQLite file beside the first model file "
    "(with --deployable: <deployable>.db)."
)

T = TypeVar("T")


def _held(contexts: str | None, deployable: str | None) -> Held:
    try:
        return held_for(contexts, deployable)
    except OptionError as exc:
        fail(str(exc))


def _revisions(files: Sequence[Path], held: Held) -> tuple[Path, list[Revision]]:
    folder = folder_for(files[0], held.name())
    try:
        return folder, revisions(folder)
    except (MigrationsError, OSError) as exc:
        fail(str(exc))


def _migrations_and_url(
    files: Sequence[Path], database_url: str | None, held: Held
) -> tuple[Path, list[Revision], str]:
    """The migrations folder, its revisions (exit 1 when there are none) and the database URL
    (`loom run`'s default database when none is given): what `apply` and `status` start from."""
    try:
        refuse_unknown_held(files, held)
    except OptionError as exc:
        fail(str(exc))
    folder, revs = _revisions(files, held)
    if not revs:
        others = [] if held.name() else named_folders(files[0])
        hint = (
            f"; {', '.join(str(f) for f in others)} hold the migrations of deployables (or sets "
            "of contexts): name one with --deployable (or --contexts)"
            if others
            else f": write the first with `loom migrate new {_files_arg(files)}{held.args()}`"
        )
        fail(f"no migrations in {folder}{hint}", 1)
    return folder, revs, database_url or default_database(files[0], held)


def _files_arg(files: Sequence[Path]) -> str:
    return " ".join(str(f) for f in files)


def _on_database(url: str, action: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `action` on the database at `url`: an unreachable database exits 2, a database that
    cannot take the migrations exits 1, each with its one-line reason."""
    from loom.migrate.database import DatabaseUnreachable

    try:
        return asyncio.run(action())
    except DatabaseUnreachable as exc:
        fail(f"{exc} ({safe_url(url)})")
    except MigrationsError as exc:
        fail(str(exc), 1)


@migrate.command("new")
@files_argument
@click.option("-m", "--message", help="What the migration does (its name).")
@click.option(
    "--allow-data-loss",
    is_flag=True,
    help="Write it even though it drops data (a removed field or aggregate, a narrowing type "
    "change).",
)
@click.option(
    "--expand",
    is_flag=True,
    help="Rolling deploy: write each field rename as its expand half (the new column beside the "
    "old, kept in step), for old and new code to run together.",
)
@click.option(
    "--contract",
    is_flag=True,
    help="Rolling deploy: drop what the open expand kept, once no replica runs the code from "
    "before it.",
)
@click.option(
    "--rewrite",
    multiple=True,
    metavar="'ENUM.OLD -> NEW'",
    help="The rows holding OLD, a member removed from ENUM, get the member NEW in this "
    "migration (repeatable).",
)
@service_options(
    "The database whose stored events (pending, dead, retained in a log) and enum values the "
    "change must keep readable; default: the one `loom run` uses. Only read."
)
def new(
    files: tuple[Path, ...],
    message: str | None,
    allow_data_loss: bool,
    expand: bool,
    contract: bool,
    rewrite: tuple[str, ...],
    database_url: str | None,
    deployable: str | None,
    contexts: str | None,
) -> None:
    """Write the next migration into migrations/ beside the first model file (a deployable's
    into migrations/<deployable>/): the steps from the model as of the last migration to the
    model now, with their lint findings, and the check that the events stored in the database
    still decode under the new model."""
    from loom.lang import compile_sources, render_text
    from loom.migrate.diff import diff
    from loom.migrate.enums import enum_findings, parse_rewrite, with_retired
    from loom.migrate.events import events_in, events_of, with_events
    from loom.migrate.model import snapshot_of_build
    from loom.migrate.pending import check_stored_events
    from loom.migrate.plan import Plan, make_plan, write_revision
    from loom.migrate.rolling import contract_steps, expand_steps, expanded_snapshot, open_expand
    from loom.migrate.snapshot import empty, model_view

    if expand and contract:
        fail("--expand and --contract are two migrations, written one after the other")
    held = _held(contexts, deployable)
    try:
        rewrites = [parse_rewrite(r) for r in rewrite]
    except ValueError as exc:
        fail(str(exc))

    for f in files:
        if not f.is_file():
            fail(f"{f}: no such file")
    sources = read_model(files)
    if sources is None:
        fail("cannot read the model files")
    result = compile_sources(sources)
    if result.diagnostics:
        click.echo(
            render_text(result.diagnostics, result.sources, color=sys.stderr.isatty()), err=True
        )
    if not result.ok or result.model is None:
        raise click.exceptions.Exit(1)
    folder, existing = _revisions(files, held)
    _check_held(files, result.model, held, existing)
    try:
        out = _build(files, sources, result.model, held)
    except (BuildError, OptionError) as exc:
        fail(str(exc))
    try:
        old = existing[-1].snapshot() if existing else empty()
    except MigrationsError as exc:
        fail(str(exc))
    current = snapshot_of_build(out, result.model)
    label = existing[-1].name if existing else "the last migration"
    opened = open_expand(old)
    number = f"{len(existing) + 1:04d}"
    written = current
    try:
        if contract:
            steps = contract_steps(old, current)
        elif expand and not opened:
            steps = expand_steps(diff(old, current))
            written = expanded_snapshot(current, steps, number)
        else:
            steps = diff(model_view(old), current)
        url = database_url or default_database(files[0], held)
        stored = _stored_enums(url, current)
        steps = with_retired(steps, current, stored, rewrites)
    except MigrationsError as exc:
        fail(str(exc), 1)
    plan = make_plan(old, current, fallback_file=str(files[0]), old_label=label, steps=steps)
    found = enum_findings(plan.steps, stored, fallback_file=str(files[0]))
    plan = Plan(plan.steps, plan.findings + found)
    if opened and not contract and (plan.steps or expand):
        fail(
            f"the expand of {label} is open: the previous code may still run on its kept columns; "
            f"once it no longer does, write the contract first: `loom migrate new "
            f"{_files_arg(files)}{held.args()} --contract`",
            1,
        )
    events = events_of(result.model)
    in_flight = asyncio.run(check_stored_events(url, events_in(old), events))
    if not plan.steps:
        if _events_report(in_flight, url, str(files[0]), label, result.sources):
            fail("nothing written: stored events would not decode under the new model", 1)
        last = f"migration {existing[-1].name}" if existing else "an empty database"
        click.echo(f"no changes: the model's schema is that of {last}; nothing written")
        if opened:
            click.echo("expand open: contract pending (`loom migrate new ... --contract`)")
        return
    if not existing:
        _note_older_database(url, current, f"{_files_arg(files)}{held.args()}")
    name = message or ("initial schema" if not existing else plan.lines()[0])
    click.echo(f"plan of the next migration ({number}):")
    click.echo(plan.render(result.sources, color=sys.stdout.isatty()))
    if _events_report(in_flight, url, str(files[0]), label, result.sources):
        fail("nothing written: stored events would not decode under the new model (see above)", 1)
    if plan.errors:
        fail("nothing written: the change cannot be applied to the existing rows (see above)", 1)
    if plan.data_loss and not allow_data_loss:
        fail(
            "nothing written: the change loses data (see above); pass --allow-data-loss if it "
            "should",
            1,
        )
    root = files[0].resolve().parent  # snapshots name the model's files relative to it
    try:
        revision = write_revision(
            folder, existing, name, plan, with_events(written, events, root), root
        )
    except MigrationsError as exc:
        fail(str(exc))
    click.echo(f"wrote {revision.script} and {revision.snapshot_path.name}")


def _note_older_database(url: str, snapshot: Snapshot, model: str) -> None:
    """Before a first migration: say so when the database already holds tables of the service
    that are not the model's now (created from an older model, before migrations), since this
    migration, written from the model now, would never apply to it."""
    from loom.migrate.database import database_shape, snapshot_shape
    from loom.migrate.enums import missing_sqlite_file
    from loom.runtime.storage.schema_check import differences

    expected = snapshot_shape(snapshot)
    try:
        if missing_sqlite_file(url):
            return
        actual = {t: c for t, c in asyncio.run(database_shape(url)).items() if t in expected}
    except Exception:  # noqa: BLE001 - nothing to compare with: nothing to say
        return
    if actual and differences(expected, actual):
        click.echo(
            f"note: the database ({safe_url(url)}) has tables that are not those of the model now "
            "(it was created from an older model, before migrations): this first migration would "
            "never apply to it. Write the first migration from the model it was created with "
            f"(`loom migrate new {model} -m baseline` with the model files as they were), then "
            "the change (docs/migrations.md#a-database-from-before-migrations-the-baseline)"
        )


def _stored_enums(url: str, snapshot: Snapshot) -> Stored:
    """The enum values outside the model's members the database holds; none, said, when it
    cannot be read (the revision checks again when it applies)."""
    from loom.migrate.enums import stored_outside

    try:
        return asyncio.run(stored_outside(url, snapshot))
    except Exception as exc:  # noqa: BLE001 - a bad URL, unreachable, refused ...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        click.echo(
            f"enum values: the count of stored values was SKIPPED ({first}); the migration "
            "refuses to apply while rows hold a member it removes"
        )
        return {}


def _events_report(
    stored: EventCheck, url: str, fallback: str, old_label: str, sources: dict[str, str]
) -> bool:
    """Print what the check of stored events found; whether it refuses the change."""
    from loom.lang.render import render_one, summary
    from loom.migrate.pending import event_findings

    where = safe_url(url)
    if stored.skipped:
        click.echo(
            f"events: the check of stored events was SKIPPED ({stored.skipped}); make sure no "
            "event the change breaks is stored, or run again with --database-url"
        )
    for brk in (b for b in stored.clear if b.durable):  # in-process events are never stored
        click.echo(f"events: {brk.describe()}; no stored event is affected ({where})")
    findings = event_findings(stored.pending, fallback_file=fallback, old_label=old_label)
    if not findings:
        return False
    color = sys.stdout.isatty()
    blocks = [render_one(d, {} if elsewhere else sources, color=color) for d, elsewhere in findings]
    click.echo("\n" + "\n\n".join(blocks) + "\n\n" + summary([d for d, _ in findings]))
    return True


def _check_held(files: Sequence[Path], model: Model, held: Held, existing: list[Revision]) -> None:
    """Exit 2 when the model declares deployables and none is named, unless `migrations/`
    already holds the whole model's history (from before it declared them), which `loom run`
    without --deployable still checks: each deployable has migrations of its own."""
    declared = declared_deployables(model)
    if not declared or held.name() is not None:
        return
    if existing:
        click.echo(
            "note: the model declares deployables; this is the whole model's migration (for "
            "`loom run` without --deployable); a deployable's: --deployable NAME"
        )
        return
    first = next(iter(declared))
    fail(
        f"the model declares deployables ({', '.join(declared)}), each with its own migrations "
        f"(migrations/<deployable>/) on its own database: name the one to write, e.g. "
        f"`loom migrate new {_files_arg(files)} --deployable {first}`"
    )


def _build(files: Sequence[Path], sources: dict[str, str], model: Model, held: Held) -> Path:
    """The build of the service of `held`, the one `loom run` uses (written when it is not
    there yet). Raises OptionError for a deployable or context the model does not have."""
    declared = declared_deployables(model)
    contexts = held.resolve([c.name for c in model.contexts], declared)
    build = cached_build_for(files, sources, held.key())
    if reuse_build(build) is None:
        write_cached_build(build, model, contexts=contexts)
    return build.out


@migrate.command("apply")
@files_argument
@service_options(DEFAULT_DATABASE)
@click.option(
    "--force",
    is_flag=True,
    help="Apply a step that breaks the running code even while replicas of an older revision "
    "are serving (they answer 503 until replaced).",
)
def apply_(
    files: tuple[Path, ...],
    database_url: str | None,
    deployable: str | None,
    contexts: str | None,
    force: bool,
) -> None:
    """Apply the pending migrations, in one transaction (PostgreSQL: under an advisory lock, so
    replicas starting at once apply them once). A second run is a no-op. A step that breaks the
    running code is refused while replicas of an older revision serve, unless --force."""
    from loom.migrate.database import apply

    _, revs, url = _migrations_and_url(files, database_url, _held(contexts, deployable))
    _refuse_breaking_under_replicas(url, revs, force=force)
    done = _on_database(url, lambda: apply(url, revs))
    click.echo(f"database: {safe_url(url)}")
    if done.baselined:
        click.echo(
            f"baseline: the tables were already those of {done.baselined[-1]}; recorded "
            f"{', '.join(done.baselined)} as applied without running"
        )
    for name in done.applied:
        click.echo(f"applied {name}")
    if not done.applied and not done.baselined:
        click.echo(f"nothing to apply: the database is at {revs[-1].name}")


def _refuse_breaking_under_replicas(url: str, revs: list[Revision], *, force: bool) -> None:
    """Exit 1, naming them, when a pending revision breaks the code of replicas still serving an
    older revision (`loom.migrate.replicas`); with `force`, say so and go on."""
    from loom.migrate.database import serving_replicas, status
    from loom.migrate.replicas import breaking_under

    async def find() -> list[Any]:
        state = await status(url, revs)
        if not state.pending:
            return []
        return breaking_under(revs, state.pending, await serving_replicas(url))

    found = _on_database(url, find)
    if not found:
        return
    now = int(time.time() * 1000)
    lines = []
    for b in found:
        steps = "; ".join(s.describe() for s in b.steps)
        lines.append(f"  {b.revision.name} breaks the running code: {steps}")
    alive = {r.id: r for b in found for r in b.replicas}.values()
    lines += [f"  serving: {r.describe(now)}" for r in alive]
    said = "\n".join(lines)
    if force:
        click.echo(f"--force: applying while replicas of an older revision serve:\n{said}")
        return
    fail(
        f"replicas of an older revision are serving, and their code cannot run once these "
        f"apply (they would answer 503 until replaced):\n{said}\n"
        "stop them first (or, with replicas, write the change as an expand and a contract: "
        "docs/migrations.md#rolling-deploys), or pass --force",
        1,
    )


@migrate.command("status")
@files_argument
@service_options(DEFAULT_DATABASE)
def status_(
    files: tuple[Path, ...],
    database_url: str | None,
    deployable: str | None,
    contexts: str | None,
) -> None:
    """Which migrations are applied, which are pending, and whether the database drifted from
    the last one applied (a table or column added or removed by hand). Exit 0 up to date, 1 not."""
    from loom.migrate.database import status
    from loom.migrate.rolling import open_expand

    folder, revs, url = _migrations_and_url(files, database_url, _held(contexts, deployable))
    state = _on_database(url, lambda: status(url, revs))
    click.echo(f"database: {safe_url(url)}")
    click.echo(f"migrations: {folder} ({len(revs)})")
    for name in state.applied:
        tag = " (baseline)" if name in state.baselined else ""
        click.echo(f"  applied  {name}{tag}")
    for rev in state.pending:
        click.echo(f"  pending  {rev.name}")
    for line in state.drift:
        click.echo(f"  drift    {line}")
    for name in state.changed:
        click.echo(f"  changed  {name}: its script was edited after it was applied (not run again)")
    if state.unrecorded_tables:
        click.echo(
            "  the database has tables but no record of migrations: `loom migrate apply` records "
            "them as a baseline when they are those of a migration's snapshot"
        )
    last = next((r for r in revs if state.applied and r.name == state.applied[-1]), None)
    if last is not None and open_expand(last.snapshot()):
        click.echo(
            f"  expand open: contract pending ({last.name} keeps the previous code's columns; "
            "once no replica runs that code: `loom migrate new ... --contract`)"
        )
    ok = not state.pending and not state.drift
    click.echo("up to date" if ok else "not up to date")
    raise click.exceptions.Exit(0 if ok else 1)
