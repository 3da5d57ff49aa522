"""The calls this service made of other contexts' handlers (`http/api_calls.py`), the last
`KEPT` of them, in memory: what the flow of one correlation (`http/flow_admin.py`) shows of them.

Kept in memory rather than in a table: a call happens on a request's path (or a reaction's), and
writing it down would cost that path a statement; a restart forgets them (their durable record is
the CLIENT span a traced service exports)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Final

KEPT: Final = 1000


@dataclass(frozen=True, slots=True)
class Call:
    """One call: when it was sent, its correlation id, the calling context and the called one,
    what it asked (`POST /api/commands/reserve`), its outcome (the status answered, or the
    problem it became) and how long it took."""

    at: datetime
    correlation_id: str | None
    tenant: str | None
    caller: str
    callee: str
    request: str
    outcome: str
    ms: float


class CallLog:
    """`service.apis.calls`: the last `KEPT` calls, oldest first."""

    def __init__(self, kept: int = KEPT) -> None:
        self._calls: deque[Call] = deque(maxlen=kept)

    def add(self, call: Call) -> None:
        self._calls.append(call)

    def of(self, correlation_id: str, tenant: str | None) -> list[Call]:
        """The calls of one correlation (`tenant`: made in that tenant only)."""
        return [
            c
            for c in list(self._calls)
            if c.correlation_id == correlation_id and (tenant is None or c.tenant == tenant)
        ]
