"""`loom version` and `loom --version`: the installed distribution's version, read from its
metadata (`importlib.metadata`), so it is the one pyproject.toml declares and never a second copy.
Nothing else is imported: `loom --version` answers as fast as `loom --help`."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import click


def version_line() -> str:
    """`loom X.Y.Z`, what both spellings print."""
    try:
        return f"loom {version('loom')}"
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "loom (not installed: no version metadata)"


@click.command(name="version")
def version_command() -> None:
    """Print Loom's version."""
    click.echo(version_line())
