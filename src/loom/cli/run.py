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
def run(files: tuple[Path, ...], color: Color, settings: RunSettings) -> None:
    """Build the model into a cache folder and serve it with uvicorn.

    The build goes to `.loom/build/<digest>/` beside the first model file; an unchanged model
    reuses it, so replicas started together on one folder share one build. A database behind its
    model, or drifted from it, is refused before serving (docs/migrations.md). Every option has
    its environment variable; the command line wins over it (docs/cli.md)."""
    from loom.cli.serve import serve

    raise click.exceptions.Exit(serve(list(files), settings, color))
