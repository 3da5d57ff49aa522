"""`loom diagram`: draw a view of a model in Mermaid, DOT or SVG (docs/diagrams.md)."""

from __future__ import annotations

import shutil
import subprocess
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
from loom.codegen.diagrams import RENDERERS, VIEWS, diagram, flow_from

GRAPHVIZ_PACKAGE = "graphviz"  # Debian's package of `dot` (scripts/setup.sh installs it)


@click.command()
@files_argument()
@click.option(
    "--view",
    required=True,
    type=click.Choice(list(VIEWS)),
    help="What to draw: context (the context map), flow (event storming: entry points, what they "
    "run, the events, the reactions), states (the state machines), deployables (the services, "
    "databases, brokers and channels).",
)
@click.option(
    "--from",
    "start",
    metavar="EVENT|ROUTE",
    help="With --view flow: only what this sets off, an event (`Orders.OrderPlaced`), a route "
    "(`POST /api/workflows/place_order`) or any node's id.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice([*RENDERERS, "svg"]),
    default="mermaid",
    show_default=True,
    help="mermaid (renders in Markdown on GitHub and GitLab), dot (Graphviz), or svg (drawn by "
    "Graphviz's `dot`, which must be installed).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The file to write; without it, the diagram is printed.",
)
@color_option()
def diagram_command(
    files: tuple[Path, ...],
    view: str,
    start: str | None,
    fmt: str,
    output: Path | None,
    color: Color,
) -> None:
    """Draw a view of the model: its context map, its event flow, its state machines or its
    deployables, in Mermaid, DOT or SVG (docs/diagrams.md)."""
    if start is not None and view != "flow":
        fail(f"--from narrows the flow view only, not `{view}`: add --view flow")
    collector_off()
    result = compile_model(model_files_of(files), Format.text, color, quiet_ok=True)
    if not result.ok or result.model is None:
        exit_at_once(1)
    drawn = "dot" if fmt == "svg" else fmt
    text = (
        diagram(result.model, view, drawn)
        if start is None
        else flow_from(result.model, start, drawn)
    )
    if text is None:
        fail(
            f"--from {start}: the flow has no such event, route or node (an event is named "
            "`Context.Event`, a route as `POST /api/workflows/place_order`)"
        )
    if fmt == "svg":
        text = _svg(text)
    if output is None:
        click.echo(text, nl=False)
        exit_at_once(0)
    try:
        output.write_text(text, encoding="utf-8", newline="\n")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror or exc}")
    echo(f"wrote {output}")
    exit_at_once(0)


def _svg(dot_text: str) -> str:
    """`dot_text` drawn as SVG by Graphviz's `dot`."""
    exe = shutil.which("dot")
    if exe is None:
        fail(
            f"--format svg needs Graphviz's `dot`, which is not installed: install the "
            f"`{GRAPHVIZ_PACKAGE}` package (apt-get install {GRAPHVIZ_PACKAGE}), or use "
            "--format dot or mermaid"
        )
    done = subprocess.run(
        [exe, "-Tsvg"], input=dot_text, capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        fail(f"Graphviz's `dot` could not draw the diagram: {done.stderr.strip()}")
    return done.stdout
