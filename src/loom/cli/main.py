"""The `loom` command: one click group whose commands are imported when chosen.

Each command is a module of `loom.cli`; the group names them (`COMMANDS`) and imports only the one
a command line asks for, so `loom check` loads neither the run options nor asyncio, nor the
migration engine. Click, not typer: typer's import and its option validation cost a tenth of a
second, as much as checking a small model (docs/benchmarks.md).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from loom.cli.output import end_now

# command -> "module:attribute", the click command or group
COMMANDS = {
    "check": "loom.cli.check:check",
    "build": "loom.cli.build:build",
    "run": "loom.cli.run:run",
    "up": "loom.cli.up:up_command",
    "fix": "loom.cli.fix:fix",
    "migrate": "loom.cli.migrate:migrate",
    "dead-letters": "loom.cli.dead_letters:dead_letters",
    "timers": "loom.cli.timers:timers",
}


class LazyGroup(click.Group):
    """A group whose commands are imported from their modules when first asked for."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.get(cmd_name)
        if where is None:
            return None
        module, _, attribute = where.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command), where
        return command


app = LazyGroup(
    name="loom",
    help="Loom: check a domain model, generate its FastAPI + SQLAlchemy service, and run it.",
    lazy=COMMANDS,
)


def main() -> None:
    """The `loom` console script: click's own handling of the command line, and the exit code as
    the command gives it (130 after Ctrl-C)."""
    try:
        result = app.main(prog_name="loom", standalone_mode=False)
    except click.ClickException as exc:  # a mistake on the command line: click's own words
        exc.show()
        raise SystemExit(exc.exit_code) from None
    except click.Abort:  # Ctrl-C
        raise SystemExit(130) from None
    code = result if isinstance(result, int) else 0
    end_now(code)
    raise SystemExit(code)
