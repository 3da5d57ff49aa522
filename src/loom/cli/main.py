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

from loom.cli.output import collector_paused, end_now

# command -> ("module:attribute" of the click command or group, its summary in `loom --help`);
# each summary is the first sentence of the command's own help (tests/cli/test_main.py)
COMMANDS = {
    "init": (
        "loom.cli.init:init",
        "Write a new project into DIR: an example model, a README with the next commands, a "
        ".gitignore and a test that passes as written.",
    ),
    "check": (
        "loom.cli.check:check",
        "Parse, resolve and type-check a model, and print its diagnostics.",
    ),
    "build": ("loom.cli.build:build", "Generate the service package for a model into OUTPUT."),
    "run": (
        "loom.cli.run:run",
        "Build the model into a cache folder and serve it with uvicorn.",
    ),
    "up": (
        "loom.cli.up:up_command",
        "Run the model's whole system here: every deployable as its own `loom run` process.",
    ),
    "fmt": (
        "loom.cli.fmt:fmt",
        "Rewrite .loom files in Loom's one canonical layout (docs/cli.md#loom-fmt).",
    ),
    "fix": (
        "loom.cli.fix:fix",
        "Rewrite .loom files for a language change (codemods; see docs/codemods.md).",
    ),
    "migrate": (
        "loom.cli.migrate:migrate",
        "Migrations of the model's database: write the next one from the model, apply them, "
        "and say where a database stands (docs/migrations.md).",
    ),
    "dead-letters": (
        "loom.cli.dead_letters:dead_letters",
        "List and redrive dead letters: durable events whose delivery failed maxAttempts times "
        "(docs/events.md) and process timeouts whose handler did (docs/processes.md).",
    ),
    "dashboard": (
        "loom.cli.dashboard:dashboard",
        "Write a Grafana dashboard of the model's metrics: a row per context, a panel per "
        "channel's lag and per process's instances (docs/observability.md).",
    ),
    "diagram": (
        "loom.cli.diagram:diagram_command",
        "Draw a view of the model: its context map, its event flow, its state machines or its "
        "deployables, in Mermaid, DOT or SVG (docs/diagrams.md).",
    ),
    "lsp": (
        "loom.cli.lsp:lsp",
        "Serve the Language Server Protocol over stdio, for editors (docs/editors.md).",
    ),
    "timers": (
        "loom.cli.timers:timers",
        "List the pending timeouts and context timers of a service, and fire one now "
        "(docs/processes.md).",
    ),
    "version": ("loom.cli.version:version_command", "Print Loom's version."),
}


class LazyGroup(click.Group):
    """A group whose commands are imported from their modules when first asked for; its help
    lists them by their summaries, importing none."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.lazy)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.lazy:
            return None
        where = self.lazy[cmd_name][0]
        module, _, attribute = where.partition(":")
        with collector_paused():
            command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command), where
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in self.lazy.items()])


def _print_version(ctx: click.Context, _: click.Parameter, asked: bool) -> None:
    if not asked or ctx.resilient_parsing:
        return
    from loom.cli.version import version_line

    click.echo(version_line())
    ctx.exit(0)


app = LazyGroup(
    name="loom",
    help="Loom: check a domain model, generate its FastAPI + SQLAlchemy service, and run it.",
    lazy=COMMANDS,
    params=[
        click.Option(
            ["--version"],
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_print_version,
            help="Print Loom's version and exit (as `loom version`).",
        )
    ],
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
