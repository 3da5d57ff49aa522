"""The `loom` command's entry point. A plain `loom check FILES…`, `loom build FILES… -o OUT` or
`loom run FILES… [options]` (options spelled out, values among the known ones, only repeatable
ones more than once) runs `loom.commands` / `loom.serve` directly; any other command line goes to
`loom.cli`, whose typer reads it, shows help, and words mistakes.

Importing typer, with the pydantic that validates each option, takes about a quarter of a second:
more than checking a small model does, and a sixth of `loom run`'s time to its first answer. The
plain forms here read exactly as typer reads them (the test suite runs both on the same command
lines); anything else is typer's to read.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from loom import commands
from loom.commands import Color, Format

if TYPE_CHECKING:
    from loom.serve import RunOptions

# an option's values: a set of words, or one of these kinds
Kind = frozenset[str] | str
_PATH, _TEXT, _INT, _FLOAT, _FLAG, _MANY = "path", "text", "int", "float", "flag", "many"
_COLORS = frozenset(c.value for c in Color)

# `loom run`'s options (RunOptions), by name
_RUN: dict[str, Kind] = {
    "database_url": _TEXT,
    "host": _TEXT,
    "port": _INT,
    "extern": _TEXT,
    "color": _COLORS,
    "jwt_secret": _TEXT,
    "jwt_public_key": _PATH,
    "jwt_audience": _TEXT,
    "jwt_issuer": _TEXT,
    "tenant_claim": _TEXT,
    "max_body_bytes": _INT,
    "max_url_bytes": _INT,
    "max_header_count": _INT,
    "max_header_bytes": _INT,
    "header_timeout": _FLOAT,
    "keep_alive_timeout": _FLOAT,
    "relay_lease": _FLOAT,
    "redelivery_wait": _FLOAT,
    "idempotency_ttl": _FLOAT,
    "pool_size": _INT,
    "pool_overflow": _INT,
    "pool_timeout": _FLOAT,
    "migrate": _FLAG,
    "contexts": _TEXT,
    "deployable": _TEXT,
    "broker": _MANY,
    "api": _MANY,
}

# the options each plain command takes: spelling -> (name, values)
_OPTIONS: dict[str, dict[str, tuple[str, Kind]]] = {
    "check": {
        "--format": ("format", frozenset(f.value for f in Format)),
        "--color": ("color", _COLORS),
    },
    "build": {
        "-o": ("output", _PATH),
        "--output": ("output", _PATH),
        "--color": ("color", _COLORS),
    },
    "run": {f"--{name.replace('_', '-')}": (name, kind) for name, kind in _RUN.items()},
}
# what typer surely reads the same way (anything else, `+1`, `1e3`, `٣`, is left to it)
_NUMBER = {_INT: re.compile(r"[0-9]{1,18}"), _FLOAT: re.compile(r"[0-9]{1,15}(\.[0-9]{1,15})?")}


def plain(argv: Sequence[str]) -> Callable[[], int] | None:
    """The command `argv` asks for, when it is a plain `check`, `build` or `run`; None otherwise."""
    if not argv or argv[0] not in _OPTIONS:
        return None
    known = _OPTIONS[argv[0]]
    files: list[Path] = []
    given: dict[str, str] = {}
    many: dict[str, list[str]] = {}
    rest = list(argv[1:])
    while rest:
        word = rest.pop(0)
        if not word.startswith("-") or word == "-":
            files.append(Path(word))
            continue
        spelling, equals, value = word.partition("=")
        option = known.get(spelling)
        if option is None:
            return None  # `--help`, `--`, a short form run together, a typo: typer's to read
        name, kind = option
        if kind == _FLAG:
            if equals or name in given:
                return None
            given[name] = "true"
            continue
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        if not value or (kind != _MANY and name in given):
            return None
        if isinstance(kind, frozenset) and value not in kind:
            return None
        if kind in _NUMBER and not _NUMBER[kind].fullmatch(value):
            return None
        if kind == _MANY:
            many.setdefault(name, []).append(value)
        else:
            given[name] = value
    if not files:
        return None
    color = Color(given.pop("color", Color.auto.value))
    if argv[0] == "check":
        fmt = Format(given.get("format", Format.text.value))
        return lambda: commands.check(files, fmt, color)
    if argv[0] == "run":
        # here, not at the top: `loom.serve` brings asyncio (some 50 ms) that a plain check or
        # build never uses
        from loom.serve import run

        return functools.partial(run, files, _run_options(given, many, color))
    if "output" not in given:
        return None
    output = Path(given["output"])
    return lambda: commands.build(files, output, color)


def _run_options(given: dict[str, str], many: dict[str, list[str]], color: Color) -> RunOptions:
    from loom.serve import RunOptions  # only for `loom run` (see `plain`)

    options = RunOptions(
        color=color,
        migrate="migrate" in given,
        broker=many.get("broker", []),
        api=many.get("api", []),
    )
    for name, value in given.items():
        kind = _RUN[name]
        if kind == _INT:
            setattr(options, name, int(value))
        elif kind == _FLOAT:
            setattr(options, name, float(value))
        elif kind == _PATH:
            setattr(options, name, Path(value))
        elif kind != _FLAG:
            setattr(options, name, value)
    return options


def main() -> None:
    command = plain(sys.argv[1:])
    try:
        if command is not None:
            code = command()
            if sys.argv[1] != "run":
                _exit_now(code)
            raise SystemExit(code)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    # here, not at the top: a plain check or build never loads typer (start-up)
    from loom.cli import main as typer_main

    typer_main()


def _exit_now(code: int) -> NoReturn:
    """End a plain check or build at once, its output flushed. Its files are written and closed,
    and it registers no exit handler; what a normal exit would add is freeing, one by one, every
    object of the model and the generated text (a third of a second at 1,000 aggregates)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
