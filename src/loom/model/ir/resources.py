"""Calls of another context's handlers through a `resource { kind: api }` binding.

`resource directory { kind: api  context: Directory  timeout: 2s  retries: 2 }` binds a context's
bodies to Directory's command and query handlers; `directory.TechnicianInfo(id: tech)` calls one.
The call runs in the callee's own unit of work, never the caller's transaction: in process when
the bound context is served by the same deployable, over HTTP otherwise (docs/deployables.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from loom.model.ir.origin import Origin

# The one kind of resource (`kind: api`), and its defaults
RESOURCE_KINDS: Final = ("api",)
DEFAULT_TIMEOUT_MS: Final = 5_000
DEFAULT_RETRIES: Final = 2
# the ranges `loom.resource-setting` allows: a call waits 1 ms .. 10 min, retries 0 .. 10 times
TIMEOUT_RANGE_MS: Final = (1, 600_000)
RETRIES_RANGE: Final = (0, 10)


@dataclass(frozen=True, slots=True)
class Resource:
    """`resource NAME { kind: api  context: TARGET  timeout: D  retries: N }` of `context`.
    `retries` applies to query calls only (a command is never sent twice)."""

    name: str
    context: str
    target: str
    origin: Origin
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    retries: int = DEFAULT_RETRIES
