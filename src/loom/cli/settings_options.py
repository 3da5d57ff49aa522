"""The command-line options of a settings class (`loom.serving.settings`): one option per field,
`--name-of-the-field`, worded by the field's help, with its variable and its default. `loom run`
takes every field of `RunSettings`, `loom up` those of `ServiceSettings`.

The options hand over their text as typed (a flag: True, a repeated option: the list); the
settings check the values, those of the command line and of the environment alike, so a value of
the wrong type is refused in the same one line wherever it came from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click
from pydantic.fields import FieldInfo

from loom.cli.output import Decorator, fail
from loom.serving.settings import (
    ServiceSettings,
    SettingsError,
    extra,
    load,
    option_names,
    shown_default,
    value_kind,
    variable,
)

_METAVARS = {int: "N", float: "SECONDS", str: "TEXT"}  # every float option is a duration


def settings_options(cls: type[ServiceSettings]) -> Decorator:
    """Add an option per field of `cls` to a command, after those declared below this decorator;
    the command gets their values as one `settings: cls` (exit 2, in one line, for a value of the
    wrong type)."""

    def add(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def with_settings(**given: Any) -> Any:
            values = {name: given.pop(name) for name in cls.model_fields}
            try:
                settings = load(cls, values)
            except SettingsError as exc:
                fail(str(exc))
            return command(**given, settings=settings)

        decorated: Callable[..., Any] = with_settings
        for name in reversed(option_names(cls)):  # click lists the last one added first
            decorated = option(name, cls.model_fields[name])(decorated)
        return decorated

    return add


def option(name: str, field: FieldInfo) -> Decorator:
    """The option of one field."""
    kind = value_kind(field)
    default = shown_default(field)
    notes = f"variable: {variable(name, field)}" + (f"; default: {default}" if default else "")
    flag = "--" + name.replace("_", "-")
    help = f"{field.description} [{notes}]"
    if kind is bool:
        return click.option(flag, is_flag=True, default=None, help=help)
    metavar = extra(field, "metavar") or _METAVARS.get(kind, "TEXT")
    return click.option(flag, multiple=kind is list, metavar=metavar, help=help)
