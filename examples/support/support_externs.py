"""The user's implementation of the extern operations of support.loom.

`loom build` writes `support/externs.py` with one `typing.Protocol` per aggregate that has extern
operations; this module provides a class of the same name with the same methods. The service imports
it from the module named by `--extern`, `LOOM_EXTERN_MODULE` or `build_app(..., extern_module=...)`.

Each method receives the loaded aggregate first, then the operation's arguments. It may change the
aggregate's fields (snake_case attributes); the service checks the invariants afterwards and saves
the aggregate like after any operation. Raising an exception refuses the call (nothing is saved).
"""

from __future__ import annotations

from typing import Any

SENT: list[tuple[str, str]] = []  # what was "sent", for the tests to observe


class TicketExterns:
    def notify(self, ticket: Any, channel: str) -> None:
        SENT.append((ticket.code, channel))
        ticket.last_notified = channel
