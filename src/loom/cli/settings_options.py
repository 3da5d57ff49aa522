"""The command-line options of a settings class (`loom.serving.settings`): one option per field,
`--name-of-the-field`, worded by the field's help, with its variable and its default. `loom run`
takes every field of `RunSettings`, `loom up` those of `ServiceSettings`.

The options hand the command their text as typed (a flag: True, a repeated option: the list); the
settings check the values, those of the command line and of the environment alike, so a value of
the wrong type is refused in the same one line wherever it came from.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from loom.cli.output import fail

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from loom.serving.settings import ServiceSettings

_METAVARS = {int: "N", float: "SECONDS", str: "TEXT"}  # every float option is a duration


class SettingsCommand(click.Command):
    """A command whose options are the fields of a settings class (`settings`, "module:Class"),
    after its own parameters. They are built the first time they are needed (to read a command
    line or to show the command's help), so listing the commands (`loom --help`) loads neither
    the settings nor pydantic."""

    def __init__(self, *args: Any, settings: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = settings
        self._built = False

    def settings_class(self) -> type[ServiceSettings]:
        module, _, name = self.settings.partition(":")
        found: type[ServiceSettings] = getattr(importlib.import_module(module), name)
        return found

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        if not self._built:
            self._built = True
            cls = self.settings_class()
            # the class's own fields first (`loom run`: where it listens), then those it inherits
            names = sorted(
                cls.model_fields, key=lambda name: name not in vars(cls)["__annotations__"]
            )
            self.params += [option(name, cls.model_fields[name]) for name in names]
        return super().get_params(ctx)

    def load(self, given: Mapping[str, Any]) -> Any:
        """The settings of the command line's values `given` (and the environment); exit 2 with
        one line for a value of the wrong type."""
        from loom.serving.settings import SettingsError, load

        cls = self.settings_class()
        try:
            return load(cls, {name: given[name] for name in cls.model_fields})
        except SettingsError as exc:
            fail(str(exc))


def option(name: str, field: FieldInfo) -> click.Option:
    """The option of one field."""
    from loom.serving.settings import extra, shown_default, value_kind, variable

    kind = value_kind(field)
    default = shown_default(field)
    notes = f"variable: {variable(name, field)}" + (f"; default: {default}" if default else "")
    flags = ["--" + name.replace("_", "-")]
    help = f"{field.description} [{notes}]"
    if kind is bool:
        return click.Option(flags, is_flag=True, default=None, help=help)
    metavar = extra(field, "metavar") or _METAVARS.get(kind, "TEXT")
    return click.Option(flags, multiple=kind is list, metavar=metavar, help=help)


def settings_from(given: Mapping[str, Any]) -> Any:
    """The settings of the running `SettingsCommand`, from its command line's values `given`."""
    command = click.get_current_context().command
    assert isinstance(command, SettingsCommand)
    return command.load(given)
