"""Events, and the channels that carry them durably."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from loom.model.ir.members import Field
from loom.model.ir.origin import Origin
from loom.model.ir.types import EventType


@dataclass(frozen=True, slots=True)
class Event:
    """An event. Its fields are never immutable; a field's default is a constant (a Literal,
    EnumMember, ListLiteral or Construct of constants), which an emit that omits the field gives
    and an event stored without the field decodes to."""

    name: str
    context: str
    fields: tuple[Field, ...]
    origin: Origin
    renamed_from: str | None = None  # the event's name in the previous model


Retention: TypeAlias = Literal["work", "log"]


@dataclass(frozen=True, slots=True)
class Channel:
    """`channel Name { carries: …  retention: …  maxAttempts: n  backoff: first .. cap }`: the events
    it carries (of any context) are durable: written to the outbox in the transaction of the write
    that raised them and delivered by the relay at least once, retried with a backoff doubling from
    `backoff_ms[0]` to `backoff_ms[1]`, dead-lettered after `max_attempts` deliveries."""

    name: str
    context: str
    events: tuple[EventType, ...]
    origin: Origin
    retention: Retention = "work"
    max_attempts: int = 5
    backoff_ms: tuple[int, int] = (1_000, 300_000)
    # the `channelSource` it is placed on (`source: Bus`); None when the model names none
    source: str | None = None
