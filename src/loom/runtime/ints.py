"""The range of an `int`, and the check generated code makes where an int leaves the domain.

The public path of `loom.runtime.values.ints` (generated code imports this one)."""

from loom.runtime.values.ints import *  # noqa: F403
