"""What every command shares on the command line: the output choices (`--format`, `--color`), the
model-files argument, and saying a sentence to the user (`echo`, `fail`)."""

from __future__ import annotations

import contextlib
import enum
import gc
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NoReturn

import click

# what the option helpers return: click's decorators of a command function
Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"  # `loom check` only (SARIF 2.1.0, for code-scanning tools)


class Color(enum.StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")  # what click.echo strips


def echo(message: str, *, err: bool = False) -> None:
    """The text and a newline, flushed, without colour codes on a stream that is not a terminal
    (as `click.echo`, without its checks of the stream: the commands print plain text)."""
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        message = _ANSI.sub("", message)
    stream.write(message + "\n")
    stream.flush()


def fail(message: str, code: int = 2) -> NoReturn:
    """Stop the command with `error: message` on stderr and the exit code."""
    echo(f"error: {message}", err=True)
    raise click.exceptions.Exit(code)


def use_color(color: Color) -> bool:
    if color is Color.auto:
        return sys.stderr.isatty()
    return color is Color.always


def colour_variables(color: Color, out: IO[str]) -> dict[str, str]:
    """The variables (`NO_COLOR`, `FORCE_COLOR`) telling a service whether to colour its text log
    lines (`loom.runtime.values.log_text.wants_colour`) as `--color` says: `always` wins over
    NO_COLOR, as a command-line choice does; `auto`, colour when `out` is a terminal and NO_COLOR
    is not set (`loom up`, whose children write to a pipe, passes on that its own `out` is)."""
    if color is Color.never:
        return {"NO_COLOR": "1"}  # wins over FORCE_COLOR
    if color is Color.always or (out.isatty() and not os.environ.get("NO_COLOR")):
        return {"FORCE_COLOR": "1", "NO_COLOR": ""}  # empty: unset (no-color.org)
    return {}


def files_argument(
    help: str = "The model's .loom files, or a folder of them (one model).",
) -> Decorator:
    """The model's files: one or more paths (`loom.build.sources.model_files` reads a folder)."""
    return click.argument(
        "files", nargs=-1, required=True, type=click.Path(path_type=Path), help=help
    )


# `--color` of the commands that serve: their log lines too (docs/observability.md#logs)
SERVICE_COLOUR = "Colour the diagnostics and, with --log-format text, the log lines."


def color_option(help: str = "Colour the diagnostics.") -> Decorator:
    return click.option(
        "--color", type=click.Choice(Color), default=Color.auto, show_default=True, help=help
    )


def format_option(*, sarif: bool = False) -> Decorator:
    """`--format text|json`, and `sarif` where the command's output is diagnostics."""
    choices = list(Format) if sarif else [f for f in Format if f is not Format.sarif]
    return click.option(
        "--format",
        type=click.Choice(choices),
        default=Format.text,
        show_default=True,
        help="Output format.",
    )


_at_once = False


def exit_at_once(code: int) -> NoReturn:
    """End the command with `code`, and the process with it as soon as `loom.cli.main.main` sees
    it (`end_now`): its files are written and closed, and it registers no exit handler."""
    global _at_once
    _at_once = True
    raise click.exceptions.Exit(code)


def end_now(code: int) -> None:
    """After `exit_at_once`, end at once, the output flushed: what a normal exit would add is
    freeing, one by one, every object of the model and the generated text (a third of a second
    at 1,000 aggregates). Otherwise nothing."""
    if not _at_once:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Importing a command, compiling and generating with the cyclic garbage collector off.

    They build a large tree of objects (the compiler's classes and functions, the model, the
    generated text) that lives until the command ends; the collector, run every few hundred
    allocations, would walk all of it again and again and find next to nothing to free (a third
    of the time of a large model). `loom check` and `loom build` are short-lived
    processes, so the few cycles made meanwhile cost only a little memory; `loom run` turns the
    collector back on before it serves."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
