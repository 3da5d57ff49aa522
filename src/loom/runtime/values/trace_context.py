"""The W3C trace context as Loom carries it (docs/observability.md#traces): the headers, and the
stored form an outbox row, an armed timeout and a message keep.

The stored form is the `traceparent`, then, when there is one, a newline and the `tracestate`: a
newline is the one separator neither header may hold. A redriven event's has `REDRIVEN` in front:
its delivery starts a new trace linked to the stored one."""

from __future__ import annotations

from collections.abc import Mapping

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
# in front of a stored trace context: the event was redriven (`redriven`)
REDRIVEN = "redriven\n"
# `messaging.system` of a delivery from the outbox in this deployable, without a broker
LOCAL_SYSTEM = "loom_outbox"
SQL_VARIABLE = "LOOM_OTEL_SQL"


def redriven(stored: str | None) -> tuple[bool, str | None]:
    """Whether a stored trace context is a redriven event's (`REDRIVEN` in front: its delivery
    starts a new trace, linked to the stored one), and the context without the mark."""
    if not stored or not stored.startswith(REDRIVEN):
        return False, stored
    while stored.startswith(REDRIVEN):  # redriven again
        stored = stored[len(REDRIVEN) :]
    return True, stored or None


def split_stored(stored: str | None) -> dict[str, str]:
    """The carrier (`traceparent`, `tracestate`) of a stored trace context (empty for None)."""
    stored = redriven(stored)[1]
    if not stored:
        return {}
    parent, _, state = stored.partition("\n")
    return {TRACEPARENT: parent, TRACESTATE: state} if state else {TRACEPARENT: parent}


def join_stored(carrier: Mapping[str, str]) -> str | None:
    """The stored form of a carrier `split_stored` reads back (None when it has no parent)."""
    parent = carrier.get(TRACEPARENT)
    if not parent:
        return None
    state = carrier.get(TRACESTATE)
    return f"{parent}\n{state}" if state else parent
