"""What the flow of one correlation answers (`GET /api/admin/flow/{id}`, `http/flow_admin.py`),
shared with the peers that answer it too (`http/flow_peers.py`), and its order."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Literal

from pydantic import BaseModel

Kind = Literal["event", "reaction", "timeout", "call"]


class FlowEntryOut(BaseModel):
    at: datetime  # an event's occurrence, a reaction's run, a timeout's due or fired time
    kind: Kind
    deployable: str | None  # null: the service runs the whole model
    context: str | None
    name: str  # the event type, the consumer, `<Process>.<timeout>`, or the request sent
    # event: pending/delivered/dead/archived; reaction: applied; timeout: armed/dead/fired;
    # call: ok, or the problem it became
    status: str
    event_id: str | None  # the event's id (a timeout's: its job id)
    causation_id: str | None  # the id of the event whose reaction raised this one
    detail: str | None  # an event's channel and last error; a timeout's key; a call's callee
    tenant: str | None


class PeerOut(BaseModel):
    url: str
    deployable: str | None  # as the peer named itself; null when it did not answer
    answered: bool
    error: str | None  # why it did not: "did not answer within 2s", its status, ...


class FlowOut(BaseModel):
    correlation_id: str
    deployable: str | None
    entries: list[FlowEntryOut]
    peers: list[PeerOut]  # the deployables asked (`peers=true`), else empty


def deployable() -> str | None:
    """This service's deployable (`loom run --deployable`, LOOM_DEPLOYABLE); None: the whole
    model."""
    return os.environ.get("LOOM_DEPLOYABLE") or None


def in_order(entries: list[FlowEntryOut]) -> list[FlowEntryOut]:
    """Time order; entries of the same instant (a virtual clock, a coarse one) in causal order:
    an event before its reactions, before the events those raised (by the causation ids)."""
    causes = {e.event_id: e.causation_id for e in entries if e.event_id and e.causation_id}

    def depth(event_id: str | None) -> int:
        seen: set[str] = set()
        while event_id is not None and event_id in causes and event_id not in seen:
            seen.add(event_id)
            event_id = causes[event_id]
        return len(seen)

    # a fired timeout before the events its handler raised (they name no cause)
    rank = {"call": 0, "timeout": 1, "event": 2, "reaction": 3}
    return sorted(entries, key=lambda e: (e.at, depth(e.event_id), rank[e.kind], e.name))
