"""The `loom` command: check, build and run a model.

Exit codes: 0 success, 1 the model has errors, 2 the command line or the environment is wrong.
Whatever goes wrong, the user gets a sentence, never a Python traceback.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from loom import commands, serve
from loom.build import (
    safe_url,
)
from loom.cli_options import (
    ContextsOption,
    DatabaseUrl,
    DeployableOption,
    ModelOrDir,
    service_database_url,
)
from loom.commands import Color, Format
from loom.commands import compile_model as _compile
from loom.dead_letters import dead_page, on_outbox, redrive
from loom.migrate.cli import migrate_app
from loom.model_files import NoModelFiles, model_files
from loom.run_options import (
    OptionError,
    declared_deployables,
    parse_brokers,
)
from loom.serve import RunOptions
from loom.service_flags import with_service_options
from loom.service_options import ServiceOptions, apply, refuse_bad_values
from loom.timers_cli import timers_app
from loom.up import UpError, nats_sources, plan
from loom.up import up as start_up

app = typer.Typer(
    name="loom",
    help="Loom: check a domain model, generate its FastAPI + SQLAlchemy service, and run it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


Files = Annotated[
    list[Path], typer.Argument(help="The model's .loom files, or a folder of them (one model).")
]


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _model_files(paths: list[Path]) -> list[Path]:
    """The model files of the paths given (a folder: its `*.loom`), or exit 2 saying why not."""
    try:
        return model_files(paths)
    except NoModelFiles as exc:
        _fail(str(exc))


@app.command()
def check(
    files: Files,
    format: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.text,
    color: Annotated[Color, typer.Option(help="Colour the text output.")] = Color.auto,
) -> None:
    """Parse, resolve and type-check a model, and print its diagnostics."""
    raise typer.Exit(commands.check(files, format, color))


@app.command()
def build(
    files: Files,
    output: Annotated[
        Path, typer.Option("-o", "--output", help="Folder to write the package into.")
    ],
    color: Annotated[Color, typer.Option(help="Colour the diagnostics.")] = Color.auto,
) -> None:
    """Generate the service package for a model into OUTPUT."""
    raise typer.Exit(commands.build(files, output, color))


@app.command()
@with_service_options
def run(
    files: Files,
    *,
    database_url: Annotated[
        str | None,
        typer.Option(
            help="SQLAlchemy async URL; default: a SQLite file beside the first model file."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    service: ServiceOptions,
    color: Annotated[Color, typer.Option(help="Colour the diagnostics.")] = Color.auto,
    contexts: Annotated[
        str | None,
        typer.Option(
            help="Serve only these contexts (comma-separated: Orders,Payment), with their own "
            "database (default: <contexts>.db beside the model, e.g. orders-payment.db).",
        ),
    ] = None,
    deployable: Annotated[
        str | None,
        typer.Option(
            help="Serve one declared deployable's contexts, with its own database (default: "
            "<deployable>.db beside the model). Not with --contexts.",
        ),
    ] = None,
    broker: Annotated[
        list[str] | None,
        typer.Option(
            help="A broker, repeatable: NAME=URL puts channel source NAME on URL "
            "($LOOM_BROKER_<NAME>); a bare URL is the broker of every durable channel with no "
            "source ($LOOM_BROKER). E.g. --broker nats://127.0.0.1:4222.",
        ),
    ] = None,
    api: Annotated[
        list[str] | None,
        typer.Option(
            help="CONTEXT=URL, repeatable: the base URL of the deployable serving a context this "
            "one calls through a `resource { kind: api }` ($LOOM_API_<CONTEXT>). E.g. --api "
            "Directory=http://127.0.0.1:8001.",
        ),
    ] = None,
) -> None:
    """Build the model into a cache folder and serve it with uvicorn.

    The build goes to `.loom/build/<digest>/` beside the first model file; an unchanged model
    reuses it, so replicas started together on one folder share one build. A database behind its
    model, or drifted from it, is refused before serving (docs/migrations.md)."""
    options = RunOptions(
        **vars(service),
        database_url=database_url,
        host=host,
        port=port,
        color=color,
        contexts=contexts,
        deployable=deployable,
        broker=broker or [],
        api=api or [],
    )
    raise typer.Exit(serve.run(files, options))


@app.command("up")
@with_service_options
def up_command(
    files: Files,
    *,
    port: Annotated[
        int, typer.Option(help="The first deployable's port; the next ones count up from it.")
    ] = 8000,
    timeout: Annotated[
        float, typer.Option(help="Seconds each service (and the broker) has to answer.")
    ] = 120.0,
    broker: Annotated[
        list[str] | None,
        typer.Option(
            help="NAME=URL: a broker `loom up` does not start (a redis channel source), or one "
            "already running instead of the local NATS server; repeatable, as for `loom run`.",
        ),
    ] = None,
    color: Annotated[Color, typer.Option(help="Colour the diagnostics.")] = Color.auto,
    service: ServiceOptions,
) -> None:
    """Run the model's whole system here: every deployable as its own `loom run` process (ports
    from --port up, a SQLite file each beside the model), plus a local NATS server when a channel
    crosses from one deployable to another. Ctrl-C stops them all. The `loom run` options that
    are the same for every deployable (--extern, the token options, the limits, the waits, the pool,
    --migrate) go to each; a bad value is refused before anything starts.

    Exit codes: 0 stopped by Ctrl-C or SIGTERM; 1 the model has errors, or a service exited on
    its own (the others are then stopped); 2 the command line or the environment is wrong."""
    files = _model_files(files)
    result = _compile(files, Format.text, color, quiet_ok=True)
    if not result.ok or result.model is None:
        raise typer.Exit(1)
    model = result.model
    try:
        units = plan(files, model, declared_deployables(model), port)
        given = broker or []
        nats = nats_sources(model, parse_brokers(given))  # each well formed, each source once
        # every deployable would refuse the same bad value: refused once, before any starts
        apply(service)
        refuse_bad_values(files, model)
        shared = service.arguments()
        code = start_up(files, units, nats=nats, brokers=given, shared=shared, timeout=timeout)
    except (UpError, OptionError) as exc:
        _fail(str(exc))
    raise typer.Exit(code)


fix_app = typer.Typer(
    name="fix",
    help="Rewrite .loom files for a language change (codemods; see docs/codemods.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(fix_app, name="fix")
app.add_typer(migrate_app, name="migrate")  # loom.migrate.cli: new, apply, status


@fix_app.command("handle")
def fix_handle(
    paths: Annotated[
        list[Path],
        typer.Argument(help="The .loom files to rewrite; a folder means every *.loom below it."),
    ],
    check_only: Annotated[
        bool,
        typer.Option(
            "--check", help="Report what would change without writing; exit 1 if anything would."
        ),
    ] = False,
) -> None:
    """Lift each workflow `handle` member into a context-level `commandHandler`.

    A handle with no faithful rewrite stays in place under a `// not lifted — <reason>` comment;
    a member already so marked is left alone, so running the command again changes nothing.

    Exit codes: 0 done (with --check: nothing would change); 1 with --check something would
    change, or a file could not be scanned as Loom; 2 a path does not exist or a file cannot be
    read or written.
    """
    from loom.codemod import fix_files, loom_files

    files, missing = loom_files(paths)
    for m in missing:
        typer.echo(f"error: {m}: no such file or folder", err=True)
    results = fix_files(files, write=not check_only)
    verb = "would lift" if check_only else "lifted"
    mark_verb = "would mark" if check_only else "marked"
    changed = scan_errors = io_errors = 0
    for r in results:
        if r.error is not None:
            typer.echo(f"error: {r.error}; file left unchanged", err=True)
            if r.io_error:
                io_errors += 1
            else:
                scan_errors += 1
            continue
        fresh = [x for x in r.left if not x.already_marked]
        if r.changed:
            changed += 1
            parts = []
            if r.lifted:
                names = ", ".join(x.name for x in r.lifted)
                parts.append(f"{verb} {len(r.lifted)} handle(s) ({names})")
            if fresh:
                parts.append(f"{mark_verb} {len(fresh)} handle(s) not lifted")
            typer.echo(f"{r.path}: " + "; ".join(parts))
        for x in r.left:
            state = "left in place (marked earlier)" if x.already_marked else "left in place"
            line, col = (x.original_line, x.original_column) if check_only else (x.line, x.column)
            typer.echo(
                f"{r.path}:{line}:{col}: handle `{x.name}` of workflow `{x.workflow}` "
                f"{state} — {x.reason}"
            )
        for note in r.notes:
            typer.echo(f"{r.path}: note: {note}")
    if check_only:
        summary = f"{changed} file(s) would change" if changed else "nothing to change"
    else:
        summary = f"{changed} file(s) changed" if changed else "nothing to change"
    errors = scan_errors + io_errors
    tail = f", {errors} with errors" if errors else ""
    typer.echo(f"{summary} ({len(files)} file(s) scanned{tail})")
    if missing or io_errors:
        raise typer.Exit(2)
    if scan_errors or (check_only and changed):
        raise typer.Exit(1)
    raise typer.Exit(0)


dead_app = typer.Typer(
    name="dead-letters",
    help="List and redrive dead letters: durable events whose delivery failed maxAttempts times "
    "(docs/events.md) and process timeouts whose handler did (docs/processes.md).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(dead_app, name="dead-letters")
app.add_typer(timers_app, name="timers")


class DeadKind(enum.StrEnum):
    event = "event"
    timeout = "timeout"


KindOption = Annotated[
    DeadKind | None,
    typer.Option("--kind", help="Only dead events, or only dead timeouts (default: both)."),
]


@dead_app.command("list")
def dead_letters_list(
    model: ModelOrDir = None,
    database_url: DatabaseUrl = None,
    format: Annotated[Format, typer.Option("--format", help="Output format.")] = Format.text,
    limit: Annotated[int, typer.Option(min=1, max=500, help="At most this many.")] = 50,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many.")] = 0,
    kind: KindOption = None,
    deployable: DeployableOption = None,
    contexts: ContextsOption = None,
) -> None:
    """List dead letters, oldest first: dead events, then dead timeouts (exit 0, also when there
    are none)."""
    import asyncio  # here, not at the top: `loom check` and `loom build` never load it (start-up)
    import json

    url = service_database_url(model, database_url, contexts, deployable)
    wanted = None if kind is None else kind.value
    try:
        page = asyncio.run(on_outbox(url, lambda svc: dead_page(svc, limit, offset, wanted)))
    except Exception as exc:  # noqa: BLE001 - a sentence, never a traceback
        _fail(f"cannot read the dead letters of {safe_url(url)}: {exc}")
    if format is Format.json:
        typer.echo(json.dumps(page, default=str, ensure_ascii=False))
        return
    items = page["items"]
    if not items:
        typer.echo(
            f"no dead letters ({page['total']} in all)" if page["total"] else "no dead letters"
        )
        return
    first = offset + 1
    typer.echo(f"{page['total']} dead letter(s); {first}-{offset + len(items)}:")
    for d in items:
        if d["kind"] == "timeout":
            typer.echo(
                f"timeout  {d['job_id']}  {d['process']}.{d['timeout']}  key={d['key']}"
                f"  attempts={d['attempts']}  due={d['due_at']}  correlation={d['correlation_id']}"
                + (f"  tenant={d['tenant']}" if d.get("tenant") else "")
            )
        else:
            typer.echo(
                f"event    {d['event_id']}  {d['event_type']}  channel={d['channel']}"
                f"  attempts={d['attempts']}  occurred={d['occurred_at']}"
                f"  correlation={d['correlation_id']}  revision={d['model_revision'] or 'unknown'}"
                + (f"  tenant={d['tenant']}" if d.get("tenant") else "")
            )
        typer.echo(f"    last error: {d['last_error']}")


@dead_app.command("redrive")
def dead_letters_redrive(
    args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="EVENT_ID [MODEL_OR_DIR]",
            help="The dead letter to put back in the queue (none with --all), then optionally "
            "the model or its folder, as for `list`.",
            show_default=False,
        ),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Redrive every dead letter.")] = False,
    database_url: DatabaseUrl = None,
    kind: KindOption = None,
    deployable: DeployableOption = None,
    contexts: ContextsOption = None,
) -> None:
    """Put dead letters back in the queue: the service's relay delivers them (its scheduler fires
    the timeouts) again from attempt 1. ID is an event id or a timeout's job id.

    Exit codes: 0 redriven (with --all, also when there was none); 1 EVENT_ID is not a dead
    letter; 2 wrong arguments or no database.
    """
    import asyncio  # here, not at the top: `loom check` and `loom build` never load it (start-up)
    from uuid import UUID

    rest = list(args or [])
    event_id: UUID | None = None
    if not all_:
        if not rest:
            _fail("name the dead letter's EVENT_ID, or pass --all")
        try:
            event_id = UUID(rest.pop(0))
        except ValueError:
            _fail("EVENT_ID must be a UUID (as `loom dead-letters list` shows it)")
    if len(rest) > 1:
        _fail(f"unexpected argument(s): {' '.join(rest[1:])}")
    url = service_database_url(Path(rest[0]) if rest else None, database_url, contexts, deployable)
    try:
        wanted = None if kind is None else kind.value
        count = asyncio.run(on_outbox(url, lambda svc: redrive(svc, event_id, wanted)))
    except Exception as exc:  # noqa: BLE001 - a sentence, never a traceback
        _fail(f"cannot redrive in {safe_url(url)}: {exc}")
    if event_id is None:
        typer.echo(f"redriven {count} dead letter(s)")
    elif count == 2:
        typer.echo(f"redriven {event_id}: the service's scheduler fires it again")
    elif count:
        typer.echo(f"redriven {event_id}: the service's relay delivers it again")
    else:
        typer.echo(f"error: no dead letter has the event id {event_id}", err=True)
        raise typer.Exit(1)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
