"""The bounds of a `decimal` and the exact arithmetic generated code does with decimals.

The public path of `loom.runtime.values.decimals` (generated code imports this one)."""

from loom.runtime.values.decimals import *  # noqa: F403
