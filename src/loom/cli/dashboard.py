"""`loom dashboard`: write a Grafana dashboard for a model's services (docs/observability.md)."""

from __future__ import annotations

from pathlib import Path

import click

# the compiler imported here, in stages, not in the command: see loom.cli.check
# isort: off
import loom.model.ir
import loom.lang.syntax
import loom.lang  # noqa: F401

# isort: on
from loom.cli.compile import collector_off, compile_model, model_files_of
from loom.cli.output import Color, Format, color_option, echo, exit_at_once, fail, files_argument
from loom.codegen.grafana import dashboard_json


@click.command()
@files_argument()
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The JSON file to write (e.g. grafana.json).",
)
@color_option()
def dashboard(files: tuple[Path, ...], output: Path, color: Color) -> None:
    """Write a Grafana dashboard of the model's metrics: a row per context, a panel per channel's
    lag and per process's instances (docs/observability.md)."""
    collector_off()
    result = compile_model(model_files_of(files), Format.text, color, quiet_ok=True)
    if not result.ok or result.model is None:
        exit_at_once(1)
    try:
        output.write_text(dashboard_json(result.model))
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    echo(f"wrote {output}: import it in Grafana (Dashboards > New > Import)")
    exit_at_once(0)
