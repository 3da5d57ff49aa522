"""The runtime clock: `now()` reads it; tests replace it.

The public path of `loom.runtime.values.clock` (generated code imports this one)."""

from loom.runtime.values.clock import *  # noqa: F403
