"""`loom check`: parse, resolve and type-check a model, and print its diagnostics."""

from __future__ import annotations

from pathlib import Path

import click

# The compiler imported here, when click loads this command, rather than in the command, and in
# stages (the model, the parser, the rest): imported in one go from the callback's deeper stack,
# its chains of nested imports went back and forth across a boundary of CPython's frame-stack
# chunks, each crossing an mmap and a munmap, some 3,000 of them: 20 ms of a small `loom check`
# (docs/benchmarks.md).
# isort: off
import loom.model.ir
import loom.lang.syntax
import loom.lang  # noqa: F401

# isort: on
from loom.cli.compile import collector_off, compile_model, model_files_of
from loom.cli.output import (
    Color,
    Format,
    color_option,
    echo,
    exit_at_once,
    files_argument,
    format_option,
)


@click.command()
@files_argument()
@format_option(sarif=True)
@color_option("Colour the text output.")
def check(files: tuple[Path, ...], format: Format, color: Color) -> None:
    """Parse, resolve and type-check a model, and print its diagnostics.

    Exit codes: 0 no errors; 1 the model has errors; 2 no model files."""
    collector_off()
    paths = model_files_of(files)
    result = compile_model(paths, format, color)
    if format is Format.text and result.ok and not result.diagnostics:
        echo(f"ok: {len(paths)} file(s), no problems")
    exit_at_once(0 if result.ok else 1)
