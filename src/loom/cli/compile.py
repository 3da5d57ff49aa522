"""Compiling a model on the command line: its files from the paths given, the compile with its
diagnostics printed, and the garbage collector kept out of the way. `loom check`, `build`, `run`,
`up` and `migrate` share it.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loom.build.sources import NoModelFiles, model_files
from loom.cli.output import Color, Format, collector_paused, echo, fail, use_color

if TYPE_CHECKING:
    from loom.lang import CompileResult


def compile_model(
    files: list[Path],
    fmt: Format,
    color: Color,
    *,
    quiet_ok: bool = False,
    sources: Mapping[str, str] | None = None,
    warnings: bool = True,
) -> CompileResult:
    """Compile the files (or `sources`, their texts already read) and print the diagnostics
    (without `warnings`, only when there are errors: someone printed the warnings already)."""
    # Imported here, not at the top: `loom run` with an unchanged model never loads the compiler,
    # which is most of its start-up time. No cycle hides behind it (loom.lang never imports this).
    from loom.lang import compile_files, compile_sources, render_json, render_sarif, render_text
    from loom.migrate.leftovers import leftover_renames  # imports loom.lang: loaded with it

    with collector_paused():
        result = compile_sources(sources) if sources is not None else compile_files(files)
    if result.model is not None and files:
        result.diagnostics.extend(leftover_renames(result.model, files[0], result.sources))
        result.diagnostics.sort(key=lambda d: d.sort_key())
    if fmt is Format.json:
        echo(render_json(result.diagnostics))
    elif fmt is Format.sarif:
        echo(render_sarif(result.diagnostics))
    elif (result.diagnostics and (warnings or not result.ok)) or not quiet_ok:
        text = render_text(result.diagnostics, result.sources, color=use_color(color))
        if text:
            echo(text, err=not result.ok or quiet_ok)
    return result


def collector_off() -> None:
    """For `loom check` and `loom build`, which end right after: turning the collector back on
    once the model is built would have it walk the whole model once more, for nothing (0.1 s at
    1,000 aggregates)."""
    gc.disable()


def model_files_of(paths: Sequence[Path]) -> list[Path]:
    """The model files of the paths given (a folder: its `*.loom`); exit 2, said, when there are
    none."""
    try:
        return model_files(paths)
    except NoModelFiles as exc:
        fail(str(exc))
