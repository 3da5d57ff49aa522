"""`loom fix`: codemods, rewriting .loom files for a language change (docs/codemods.md)."""

from __future__ import annotations

from pathlib import Path

import click


@click.group()
def fix() -> None:
    """Rewrite .loom files for a language change (codemods; see docs/codemods.md)."""


@fix.command("handle")
@click.argument(
    "paths",
    nargs=-1,
    required=True,
    type=click.Path(path_type=Path),
    help="The .loom files to rewrite; a folder means every *.loom below it.",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Report what would change without writing; exit 1 if anything would.",
)
def fix_handle(paths: tuple[Path, ...], check_only: bool) -> None:
    """Lift each workflow `handle` member into a context-level `commandHandler`.

    A handle with no faithful rewrite stays in place under a `// not lifted — <reason>` comment;
    a member already so marked is left alone, so running the command again changes nothing.

    Exit codes: 0 done (with --check: nothing would change); 1 with --check something would
    change, or a file could not be scanned as Loom; 2 a path does not exist or a file cannot be
    read or written.
    """
    from loom.codemod import fix_files, loom_files

    files, missing = loom_files(paths)
    for m in missing:
        click.echo(f"error: {m}: no such file or folder", err=True)
    results = fix_files(files, write=not check_only)
    verb = "would lift" if check_only else "lifted"
    mark_verb = "would mark" if check_only else "marked"
    changed = scan_errors = io_errors = 0
    for r in results:
        if r.error is not None:
            click.echo(f"error: {r.error}; file left unchanged", err=True)
            if r.io_error:
                io_errors += 1
            else:
                scan_errors += 1
            continue
        fresh = [x for x in r.left if not x.already_marked]
        if r.changed:
            changed += 1
            parts = []
            if r.lifted:
                names = ", ".join(x.name for x in r.lifted)
                parts.append(f"{verb} {len(r.lifted)} handle(s) ({names})")
            if fresh:
                parts.append(f"{mark_verb} {len(fresh)} handle(s) not lifted")
            click.echo(f"{r.path}: " + "; ".join(parts))
        for x in r.left:
            state = "left in place (marked earlier)" if x.already_marked else "left in place"
            line, col = (x.original_line, x.original_column) if check_only else (x.line, x.column)
            click.echo(
                f"{r.path}:{line}:{col}: handle `{x.name}` of workflow `{x.workflow}` "
                f"{state} — {x.reason}"
            )
        for note in r.notes:
            click.echo(f"{r.path}: note: {note}")
    if check_only:
        summary = f"{changed} file(s) would change" if changed else "nothing to change"
    else:
        summary = f"{changed} file(s) changed" if changed else "nothing to change"
    errors = scan_errors + io_errors
    tail = f", {errors} with errors" if errors else ""
    click.echo(f"{summary} ({len(files)} file(s) scanned{tail})")
    if missing or io_errors:
        raise click.exceptions.Exit(2)
    if scan_errors or (check_only and changed):
        raise click.exceptions.Exit(1)
    raise click.exceptions.Exit(0)
