"""`loom fmt`: rewrite .loom files in Loom's one canonical layout (`loom.lang.format`)."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path

import click

from loom.cli.compile import model_files_of
from loom.cli.output import Color, color_option, echo, exit_at_once, use_color
from loom.lang.format import format_source
from loom.lang.render import render_text

STDIN = "-"


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True, help="Write nothing; list the files that would change.")
@click.option("--diff", is_flag=True, help="Write nothing; print what would change, as a diff.")
@color_option("Colour the diagnostics of a file that does not parse.")
def fmt(files: tuple[Path, ...], check: bool, diff: bool, color: Color) -> None:
    """Rewrite .loom files in Loom's one canonical layout (docs/cli.md#loom-fmt).

    FILES are .loom files or folders of them; `-` reads standard input and writes the result to
    standard output. A file that does not parse is left as it is, its diagnostics printed.
    Exit codes: 0 done (with --check or --diff: nothing to change); 1 a file does not parse, or
    (with --check or --diff) would change; 2 a folder with no .loom file."""
    from_stdin = any(str(f) == STDIN for f in files)
    paths = model_files_of([f for f in files if str(f) != STDIN]) if len(files) > from_stdin else []
    failed = changed = 0
    for path in [Path(STDIN)] * from_stdin + paths:
        name = "<stdin>" if str(path) == STDIN else str(path)
        try:
            text = sys.stdin.read() if name == "<stdin>" else path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            echo(f"error: cannot read {name}: {exc}", err=True)
            failed += 1
            continue
        result = format_source(text, name)
        if result.text is None:
            echo(
                render_text(list(result.diagnostics), {name: text}, color=use_color(color)),
                err=True,
            )
            failed += 1
            continue
        if name == "<stdin>" and not (check or diff):
            click.echo(result.text, nl=False)
            continue
        if result.text == text:
            continue
        changed += 1
        if diff:
            lines = difflib.unified_diff(
                text.splitlines(keepends=True), result.text.splitlines(keepends=True), name, name
            )
            click.echo("".join(lines), nl=False)
        elif check:
            echo(name)
        else:
            path.write_text(result.text, encoding="utf-8")
    if not (check or diff) and paths:
        echo(f"{changed} file(s) reformatted, {len(paths) - changed - failed} unchanged", err=True)
    exit_at_once(1 if failed or ((check or diff) and changed) else 0)
