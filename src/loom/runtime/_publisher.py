"""The relay's broker side: an outbox row of a channel on a broker, produced by this deployable, is
published as a `Message` before the row is marked done.

A publish failure is the broker's, not the event's: it counts no attempt of the row. The relay
releases the row (and every later row bound for the same broker, so publish order is event order)
and tries again after a pause that doubles with each failure in a row.
"""

from __future__ import annotations

import dataclasses
import logging
import types
from typing import Any, Union, get_args, get_origin, get_type_hints
from uuid import UUID

from ._brokers import BrokerLink
from ._domain import DomainEvent
from ._events import UNKNOWN_REVISION
from ._logs import log_fact
from ._transport import Message

_KEY_FIELDS: dict[type, str | None] = {}


def _is_id(annotation: Any) -> bool:
    """Whether a field's type is an aggregate id (a NewType over UUID), optional or not."""
    if get_origin(annotation) in (Union, types.UnionType):
        return any(_is_id(a) for a in get_args(annotation) if a is not type(None))
    while hasattr(annotation, "__supertype__"):
        annotation = annotation.__supertype__
    return annotation is UUID


def key_field(cls: type[DomainEvent]) -> str | None:
    """The field an event class is keyed by on a broker: its `key_field` when the class names
    one, else its first id field (for an aggregate's own events, the aggregate's id: they are
    declared with it first), else its first field; None for an event with no field."""
    if cls in _KEY_FIELDS:
        return _KEY_FIELDS[cls]
    name = cls.key_field
    if name is None and dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
        try:
            hints = get_type_hints(cls)
        except Exception:  # noqa: BLE001 - an unresolvable annotation is simply not an id
            hints = {}
        name = next((n for n in names if _is_id(hints.get(n))), names[0] if names else None)
    _KEY_FIELDS[cls] = name
    return name


def event_key(event: DomainEvent) -> str:
    """The event's correlation key as text (`Message.key`; "" when it has none): events of one
    key reach each consumer in publish order."""
    name = key_field(type(event))
    value = None if name is None else getattr(event, name, None)
    return "" if value is None else str(value)


def message_of(row: Any, event: DomainEvent) -> Message:
    """The message of an outbox row (the payload exactly as stored)."""
    return Message(
        event_id=str(row.event_id),
        event_type=row.event_type,
        channel=row.channel,
        payload=row.payload,
        key=event_key(event),
        correlation_id=row.correlation_id,
        causation_id=row.causation_id,
        occurred_at=row.occurred_at.isoformat(),
        model_revision=row.model_revision,
        tenant=row.tenant,
    )


class Publisher:
    """Publishes outbox rows; `failures` counts the publishes that failed in a row (the relay's
    pause grows with it)."""

    def __init__(self) -> None:
        self.failures = 0
        self.published = 0

    async def publish(self, link: BrokerLink, row: Any, event: DomainEvent) -> bool:
        """Publish one row; False when the broker could not take it (logged `publish_failed`)."""
        message = message_of(row, event)
        fields = {
            "event_type": row.event_type,
            "event_id": message.event_id,
            "correlation_id": row.correlation_id,
            "causation_id": row.causation_id,
            "channel": row.channel,
            "model_revision": row.model_revision or UNKNOWN_REVISION,
        }
        try:
            await link.open()
            await link.transport.publish(message)
        except Exception as exc:  # noqa: BLE001 - any broker trouble: release and retry later
            self.failures += 1
            error = f"{type(exc).__name__}: {exc}"
            log_fact(
                "publish_failed",
                logging.WARNING,
                {**fields, "attempt": self.failures, "error": error, "broker": link.name},
            )
            return False
        self.failures = 0
        self.published += 1
        log_fact(
            "event_published", logging.INFO, {**fields, "key": message.key, "broker": link.name}
        )
        return True
