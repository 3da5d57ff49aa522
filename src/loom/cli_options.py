"""The options the commands on a service's database share (`loom dead-letters`, `loom timers`):
which database, named by the model beside it or by URL."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from loom.dead_letters import default_url, refuse_missing_sqlite
from loom.model_files import NoModelFiles, model_files
from loom.run_options import OptionError, held_for, refuse_unknown_held

ModelOrDir = Annotated[
    Path | None,
    typer.Argument(
        help="The model (or its folder): its database is the one `loom run` uses, a SQLite file "
        "beside the model. Default: the current folder.",
        show_default=False,
    ),
]
DatabaseUrl = Annotated[
    str | None, typer.Option(help="The service's database instead of the model's default one.")
]
DeployableOption = Annotated[
    str | None,
    typer.Option(
        "--deployable", help="A deployable's default database (<deployable>.db beside the model)."
    ),
]
ContextsOption = Annotated[
    str | None,
    typer.Option("--contexts", help="The default database of `loom run --contexts` with these."),
]


def fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def service_database_url(
    model: Path | None, database_url: str | None, contexts: str | None, deployable: str | None
) -> str:
    """The explicit URL, else the SQLite file `loom run` keeps beside the model for the service
    named (the whole model by default)."""
    try:
        held = held_for(contexts, deployable)
        if held.name() is not None:
            refuse_unknown_held(_model_files_of(model), held)
        if database_url is None:
            return default_url(model, held)
        refuse_missing_sqlite(database_url)
        return database_url
    except OptionError as exc:
        fail(str(exc))


def _model_files_of(model: Path | None) -> list[Path]:
    """The model's files (none when there is no model to judge the names by: with
    --database-url the command needs none)."""
    target = model or Path.cwd()
    if target.is_file():
        return [target]
    try:
        return model_files([target]) if target.is_dir() else []
    except NoModelFiles:
        return []
