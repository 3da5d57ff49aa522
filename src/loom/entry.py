"""The `loom` command's entry point. A plain `loom check FILES…` or `loom build FILES… -o OUT`
(options spelled out, each at most once, values among the known ones) runs `loom.commands` directly;
any other command line goes to `loom.cli`, whose typer reads it, shows help, and words mistakes.

Importing typer, with the pydantic that validates each option, takes about a quarter of a second:
more than checking a small model does. The plain forms here read exactly as typer reads them (the
test suite runs both on the same command lines); anything else is typer's to read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from loom import commands
from loom.commands import Color, Format

# the options each plain command takes: spelling -> (name, allowed values or None for a path)
_OPTIONS: dict[str, dict[str, tuple[str, frozenset[str] | None]]] = {
    "check": {
        "--format": ("format", frozenset(f.value for f in Format)),
        "--color": ("color", frozenset(c.value for c in Color)),
    },
    "build": {
        "-o": ("output", None),
        "--output": ("output", None),
        "--color": ("color", frozenset(c.value for c in Color)),
    },
}


def plain(argv: Sequence[str]) -> Callable[[], int] | None:
    """The command `argv` asks for, when it is a plain `check` or `build`; None otherwise."""
    if not argv or argv[0] not in _OPTIONS:
        return None
    known = _OPTIONS[argv[0]]
    files: list[Path] = []
    given: dict[str, str] = {}
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
        if not equals:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        name, allowed = option
        if name in given or (allowed is not None and value not in allowed) or not value:
            return None
        given[name] = value
    if not files:
        return None
    color = Color(given.get("color", Color.auto.value))
    if argv[0] == "check":
        fmt = Format(given.get("format", Format.text.value))
        return lambda: commands.check(files, fmt, color)
    if "output" not in given:
        return None
    output = Path(given["output"])
    return lambda: commands.build(files, output, color)


def main() -> None:
    command = plain(sys.argv[1:])
    try:
        if command is not None:
            raise SystemExit(command())
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    # here, not at the top: a plain check or build never loads typer (start-up)
    from loom.cli import main as typer_main

    typer_main()


if __name__ == "__main__":
    main()
