"""`loom build`: generate the service package of a model into a folder."""

from __future__ import annotations

from pathlib import Path

import click

# the compiler and the generator imported here, in stages, not in the command: see loom.cli.check
# isort: off
import loom.model.ir
import loom.lang.syntax
import loom.lang
import loom.codegen.python  # noqa: F401

# isort: on
from loom.build.package import BuildError, build_model, deployable_packages
from loom.cli.compile import collector_off, compile_model, model_files_of
from loom.cli.output import (
    Color,
    Format,
    collector_paused,
    color_option,
    echo,
    exit_at_once,
    fail,
    files_argument,
)


@click.command()
@files_argument()
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="Folder to write the package into.",
)
@color_option()
def build(files: tuple[Path, ...], output: Path, color: Color) -> None:
    """Generate the service package for a model into OUTPUT."""
    collector_off()
    paths = model_files_of(files)
    result = compile_model(paths, Format.text, color, quiet_ok=True)
    if not result.ok or result.model is None:
        exit_at_once(1)
    try:
        with collector_paused():
            written = build_model(result.model, output)
    except BuildError as exc:
        fail(str(exc))
    echo(f"wrote {len(written)} files to {output}")
    for name, deployable in deployable_packages(result.model):
        echo(f"  {output / name}: deployable {deployable.name} ({', '.join(deployable.contexts)})")
    exit_at_once(0)
