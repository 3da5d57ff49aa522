"""`loom run`: build the model into a cache folder and serve it (`loom.cli.serve` does it)."""

from __future__ import annotations

from pathlib import Path

import click

from loom.cli.output import SERVICE_COLOUR, Color, color_option, files_argument
from loom.cli.settings_options import settings_options
from loom.serving.settings import RunSettings


@click.command()
@files_argument()
@settings_options(RunSettings)
@color_option(SERVICE_COLOUR)
@click.option(
    "--reload",
    is_flag=True,
    help="Rebuild and restart the service whenever a .loom file of the model changes, on the "
    "same port and database, applying additive changes to it as --migrate does; a model with "
    "errors leaves the previous service serving (docs/cli.md).",
)
def run(files: tuple[Path, ...], color: Color, reload: bool, settings: RunSettings) -> None:
    """Build the model into a cache folder and serve it with uvicorn.

    The build goes to `.loom/build/<digest>/` beside the first model file; an unchanged model
    reuses it, so replicas started together on one folder share one build. A database behind its
    model, or drifted from it, is refused before serving (docs/migrations.md). Every option has
    its environment variable; the command line wins over it (docs/cli.md)."""
    if reload:
        from loom.cli.reload import supervise

        raise click.exceptions.Exit(supervise(list(files), settings, color))
    from loom.cli.serve import serve

    raise click.exceptions.Exit(serve(list(files), settings, color))
