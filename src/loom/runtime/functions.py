"""The built-in functions of expressions (calendar arithmetic, durations as numbers, date parts,
strings).

The public path of `loom.runtime.values.functions` (generated code imports this one)."""

from loom.runtime.values.functions import *  # noqa: F403
