"""What one broker message needs applied before it, for one consumer: the rule ordering a key's
events across the replicas of a consuming deployable (docs/events.md, "What is guaranteed").

A producer stamps each message bound for a broker with `Loom-Key-Counts`: for the message's key,
how many events of each type of the channel it had committed, this one included. A consumer
filters by event type, so one sequence per key would leave gaps; the counts per type say exactly
which earlier events a consumer reading types T must have applied: for a message of type t with
counts v, applied[u] >= v[u] for every u in T other than t, and applied[t] >= v[t] - 1. Kept
apart from the tables (`messaging/ordering.py`) so the event bus can carry it without importing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loom.model import messaging as wire
from loom.runtime.messaging.transports.base import Message


class OutOfOrder(Exception):
    """Raised in a reaction's transaction when an earlier event of its key is not applied yet:
    the transaction rolls back (its inbox row with it) and the consumer waits again."""


@dataclass(slots=True)
class KeyOrder:
    """One message's place among its key's events for `consumer`, which reads `reads`; the
    state of its application (set by `messaging.ordering.claim_turn` and the consumer)."""

    consumer: str
    key: str
    event_type: str
    counts: dict[str, int]
    reads: tuple[str, ...]
    forced: bool = False  # the gap limit passed: applied whatever is still missing
    blocked: bool = False  # the reaction's transaction found an earlier event missing
    recorded: bool = False  # the progress was written in the reaction's transaction
    late: bool = False  # a later event of its key had been applied before it

    @property
    def position(self) -> int:
        """Its place in the key's events of this producer: how many there were up to it."""
        return sum(self.counts.values())

    @property
    def types(self) -> tuple[str, ...]:
        """The types whose progress this consumer checks: those it reads, and the message's."""
        return tuple(dict.fromkeys((*self.reads, self.event_type)))

    @property
    def first(self) -> bool:
        """Whether no earlier event of its key is one this consumer reads (a key's first
        event, the common case): its turn has come whatever was applied."""
        return not self.missing({})

    def missing(self, applied: Mapping[str, int]) -> dict[str, int]:
        """Per event type, how many earlier events of the key are not applied yet (empty: it
        may be applied now)."""
        out: dict[str, int] = {}
        for u in self.types:
            need = self.counts.get(u, 0) - (1 if u == self.event_type else 0)
            have = applied.get(u, 0)
            if have < need:
                out[u] = need - have
        return out

    def overtaken(self, applied: Mapping[str, int]) -> bool:
        """Whether an event of its key committed after it was applied already (it is late: the
        key went on without it, past the gap limit, or it is a redelivery of a dead letter)."""
        return any(
            applied.get(u, 0) > self.counts.get(u, 0) - (1 if u == self.event_type else 0)
            for u in self.types
        )


def order_of(consumer: str, reads: tuple[str, ...], message: Message) -> KeyOrder | None:
    """The order of `message` for `consumer`; None for a message without counts (written before
    them, or by a producer that sends none, or counting no event of its own type): it is applied
    as it comes."""
    counts = wire.parse_key_counts(message.key_counts)
    if counts is None or counts.get(message.event_type, 0) < 1:
        return None
    return KeyOrder(consumer, message.key, message.event_type, counts, reads)
