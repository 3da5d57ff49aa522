"""What `loom check` and `loom build` do, without the command-line framework: `loom.cli` declares
the commands (with typer) and calls these; `loom.entry` calls them directly for a plain command line,
because importing typer (and the pydantic it validates every option with) costs more than checking
a small model.

Exit codes: 0 success, 1 the model has errors, 2 the environment is wrong (a build refused).
"""

from __future__ import annotations

import contextlib
import enum
import gc
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from loom.build import BuildError, build_model, deployable_packages
from loom.model_files import NoModelFiles, model_files

if TYPE_CHECKING:
    from loom.lang import CompileResult


class Format(enum.StrEnum):
    text = "text"
    json = "json"


class Color(enum.StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what click.echo strips


def echo(message: str, *, err: bool = False) -> None:
    """`typer.echo` of a text: the text and a newline, flushed, without colour codes on a stream
    that is not a terminal."""
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        message = _ANSI.sub("", message)
    stream.write(message + "\n")
    stream.flush()


def use_color(color: Color) -> bool:
    if color is Color.auto:
        return sys.stderr.isatty()
    return color is Color.always


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Compiling and generating with the cyclic garbage collector off.

    They build a large tree of objects that lives until the command ends; the collector, run every
    few hundred allocations, would walk all of it again and again and find next to nothing to free
    (a third of the time of a large model). `loom check` and `loom build` are short-lived
    processes, so the few cycles made meanwhile cost only a little memory; `loom run` turns the
    collector back on before it serves."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def compile_model(
    files: list[Path],
    fmt: Format,
    color: Color,
    *,
    quiet_ok: bool = False,
    sources: Mapping[str, str] | None = None,
) -> CompileResult:
    """Compile the files (or `sources`, their texts already read) and print the diagnostics."""
    # Imported here, not at the top: `loom run` with an unchanged model never loads the compiler,
    # which is most of its start-up time. No cycle hides behind it (loom.lang never imports this).
    from loom.lang import compile_files, compile_sources, render_json, render_text
    from loom.migrate.leftovers import leftover_renames  # imports loom.lang: loaded with it

    with collector_paused():
        result = compile_sources(sources) if sources is not None else compile_files(files)
    if result.model is not None and files:
        result.diagnostics.extend(leftover_renames(result.model, files[0], result.sources))
        result.diagnostics.sort(key=lambda d: d.sort_key())
    if fmt is Format.json:
        echo(render_json(result.diagnostics))
    elif result.diagnostics or not quiet_ok:
        text = render_text(result.diagnostics, result.sources, color=use_color(color))
        if text:
            echo(text, err=not result.ok or quiet_ok)
    return result


def _collector_off() -> None:
    # Both commands end right after: turning the collector back on once the model is built would
    # have it walk the whole model once more, for nothing (0.1 s at 1,000 aggregates).
    gc.disable()


def _model(paths: list[Path]) -> list[Path] | None:
    """The model files of the paths given (a folder: its `*.loom`); None, said, when there are none."""
    try:
        return model_files(paths)
    except NoModelFiles as exc:
        echo(f"error: {exc}", err=True)
        return None


def check(paths: list[Path], fmt: Format, color: Color) -> int:
    """`loom check`: parse, resolve and type-check a model, print its diagnostics; the exit code."""
    _collector_off()
    files = _model(paths)
    if files is None:
        return 2
    result = compile_model(files, fmt, color)
    if fmt is Format.text and result.ok and not result.diagnostics:
        echo(f"ok: {len(files)} file(s), no problems")
    return 0 if result.ok else 1


def build(paths: list[Path], output: Path, color: Color) -> int:
    """`loom build`: generate the service package of a model into `output`; the exit code."""
    _collector_off()
    files = _model(paths)
    if files is None:
        return 2
    result = compile_model(files, Format.text, color, quiet_ok=True)
    if not result.ok or result.model is None:
        return 1
    try:
        with collector_paused():
            written = build_model(result.model, output)
    except BuildError as exc:
        echo(f"error: {exc}", err=True)
        return 2
    echo(f"wrote {len(written)} files to {output}")
    for name, deployable in deployable_packages(result.model):
        echo(f"  {output / name}: deployable {deployable.name} ({', '.join(deployable.contexts)})")
    return 0
