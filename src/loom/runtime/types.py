"""Column types for generated tables: exact decimals, UTC datetimes and JSON lists, identical

The public path of `loom.runtime.values.types` (generated code imports this one)."""

from loom.runtime.values.types import *  # noqa: F403
