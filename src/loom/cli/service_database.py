"""What the commands on a service's database share (`loom dead-letters`, `loom timers`): which
database, named by the model beside it or by URL, and opening its tables without the model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import click

from loom.build.sources import NoModelFiles, model_files
from loom.cli.output import fail
from loom.serving.database import default_url, refuse_missing_sqlite
from loom.serving.held import OptionError, held_for, refuse_unknown_held


def database_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options naming the database: `--database-url`, or the default database of the
    service `--deployable` or `--contexts` name."""
    for option in reversed(
        [
            click.option(
                "--database-url", help="The service's database instead of the model's default one."
            ),
            click.option(
                "--deployable",
                help="A deployable's default database (<deployable>.db beside the model).",
            ),
            click.option(
                "--contexts", help="The default database of `loom run --contexts` with these."
            ),
        ]
    ):
        command = option(command)
    return command


def page_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--limit` and `--offset` of a listing."""
    limit = click.option(
        "--limit",
        type=click.IntRange(1, 500),
        default=50,
        show_default=True,
        help="At most this many.",
    )
    offset = click.option(
        "--offset", type=click.IntRange(min=0), default=0, show_default=True, help="Skip this many."
    )
    return limit(offset(command))


MODEL_FILES_HELP = (
    "The model's .loom files, or a folder of them, as `loom run` was given them: its database "
    "is the one `loom run` uses, a SQLite file beside the model. Default: the current folder."
)


def model_files_argument(command: Callable[..., Any]) -> Callable[..., Any]:
    """The optional FILE... argument: the model, as `loom check` and `loom run` take it."""
    return click.argument(
        "files",
        nargs=-1,
        metavar="[FILE]...",
        type=click.Path(path_type=Path),
        help=MODEL_FILES_HELP,
    )(command)


def service_database_url(
    files: Sequence[Path], database_url: str | None, contexts: str | None, deployable: str | None
) -> str:
    """The explicit URL, else the SQLite file `loom run` keeps beside the model for the service
    named (the whole model by default)."""
    try:
        held = held_for(contexts, deployable)
        if held.name() is not None:
            refuse_unknown_held(_model_files_of(files), held)
        if database_url is None:
            return default_url(files, held)
        refuse_missing_sqlite(database_url)
        return database_url
    except OptionError as exc:
        fail(str(exc))


def _model_files_of(paths: Sequence[Path]) -> list[Path]:
    """The model's files (none when there is no model to judge the names by: with
    --database-url the command needs none)."""
    try:
        return model_files([p for p in paths or [Path.cwd()] if p.exists()])
    except NoModelFiles:
        return []


async def audit_command(
    service: Any, action: str, targets: Sequence[object], parameters: dict[str, Any], outcome: str
) -> None:
    """Write a command's action to the service's admin audit log, as the console's and the
    admin routes' are: by this machine's user (`user@host`), `"via": "cli"`. A database from
    before the audit log has no table for it: the action stands, and stderr says it was not
    audited."""
    import getpass
    import socket

    from sqlalchemy.exc import SQLAlchemyError

    from loom.runtime.http.audit import acting, audited

    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container's)
        user = "unknown"
    with acting(f"{user}@{socket.gethostname()}", None, "cli"):
        try:
            await audited(service, None, action, targets, parameters, outcome)
        except SQLAlchemyError as exc:
            click.echo(f"warning: not audited ({type(exc).__name__}): {exc}", err=True)


async def on_outbox(url: str, action: Callable[[Any], Awaitable[Any]]) -> Any:
    """Run `action(service)` on the tables directly (no model needed): the service has channels
    when the database has an outbox, and processes when it has a timer table; a database where
    no such service ever ran reads as empty."""
    from sqlalchemy import MetaData, inspect

    from loom.runtime import Channel, Service

    probe = Service.from_url(url, MetaData())
    try:
        async with probe.engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
    finally:
        await probe.dispose()
    channels = [Channel("(any)", ())] if "__loom_outbox" in tables else []
    service = Service.from_url(
        url, MetaData(), channels=channels, processes="__loom_timers" in tables
    )
    try:
        return await action(service)
    finally:
        await service.dispose()
