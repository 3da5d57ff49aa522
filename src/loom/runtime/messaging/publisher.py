"""The relay's broker side: an outbox row of a channel on a broker, produced by this deployable, is
published as a `Message` before the row is marked done.

A round's rows for one broker are published pipelined, in waves (`waves`): every message of a
wave is sent before any ack is awaited, and a wave holds at most one row of each key, so the
rows of one key go one wave after the other, in event order.

A publish failure is the broker's, not the event's: it counts no attempt of the row. The relay
releases the row, and every row of the round not acked yet (the later waves are never sent, so no
later row of its key is stored ahead of it), and tries again after a pause that doubles with each
failed round in a row.
"""

from __future__ import annotations

import dataclasses
import logging
import types
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints
from uuid import UUID

from loom.runtime.messaging.brokers import BrokerLink
from loom.runtime.messaging.events import UNKNOWN_REVISION
from loom.runtime.messaging.transports.base import Message
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.logs import log_fact
from loom.runtime.values.metrics import Metrics

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer

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
        key_counts=row.key_counts,
        trace_context=row.trace_context,
    )


def waves(messages: Sequence[Message]) -> list[list[int]]:
    """The indexes of `messages` (in event order) in the waves they are published in: the first
    message of each key, then the second of each, and so on, each wave in event order. A wave is
    pipelined; the next is sent only once every message of this one was acked, so a failed
    publish can never leave a later message of its key stored ahead of it."""
    out: list[list[int]] = []
    seen: dict[str, int] = {}
    for index, message in enumerate(messages):
        wave = seen.get(message.key, 0)
        seen[message.key] = wave + 1
        if wave == len(out):
            out.append([])
        out[wave].append(index)
    return out


class Publisher:
    """Publishes outbox rows; `failures` counts the rounds in a row whose publishes failed (the
    relay's pause grows with it)."""

    def __init__(self) -> None:
        self.failures = 0
        self.published = 0

    async def publish(
        self,
        link: BrokerLink,
        rows: Sequence[tuple[Any, DomainEvent]],
        may_go: Callable[[], bool],
        metrics: Metrics,
        tracer: Tracer | None = None,
    ) -> list[bool]:
        """Publish `rows` (in event order) to `link`'s broker, wave by wave (`waves`); answers
        which were acked. After a wave with a failure (logged once, `publish_failed`), and once
        `may_go()` is false (the relay is stopping or its lease ran out), nothing more is sent:
        the rows not acked are published again by a later round. `metrics` times each wave.
        Traced, each message has a `send <channel>` span (`Tracer.sends`), a child of the trace
        that raised its event, whose context travels in the message's headers."""
        messages = [message_of(row, event) for row, event in rows]
        if tracer is None:
            return await self._publish(link, rows, messages, may_go, metrics)
        sends = tracer.sends(link.transport.kind, messages)
        acked: list[bool] = []
        try:
            acked = await self._publish(link, rows, messages, may_go, metrics)
            return acked
        finally:
            tracer.sent(sends, acked)

    async def _publish(
        self,
        link: BrokerLink,
        rows: Sequence[tuple[Any, DomainEvent]],
        messages: list[Message],
        may_go: Callable[[], bool],
        metrics: Metrics,
    ) -> list[bool]:
        acked = [False] * len(rows)
        for wave in waves(messages):
            if not may_go():
                break
            results: Sequence[BaseException | None]
            try:
                await link.open()
                began = perf_counter()
                results = await link.transport.publish_many([messages[i] for i in wave])
                metrics.relay_publish.observe(perf_counter() - began)
            except Exception as exc:  # noqa: BLE001 - any broker trouble: release and retry later
                results = [exc] * len(wave)
            failed: tuple[int, BaseException] | None = None
            for index, error in zip(wave, results, strict=True):
                if error is None:
                    acked[index] = True
                    self._published(link, rows[index][0], messages[index])
                elif failed is None:
                    failed = (index, error)
            if failed is not None:
                index, error = failed
                self.failures += 1
                self._failed(link, rows[index][0], messages[index], error, acked.count(False))
                return acked
        self.failures = 0
        return acked

    def _published(self, link: BrokerLink, row: Any, message: Message) -> None:
        self.published += 1
        fields = {**_fields(row, message), "key": message.key, "broker": link.name}
        log_fact("event_published", logging.INFO, fields)

    def _failed(
        self, link: BrokerLink, row: Any, message: Message, exc: BaseException, left: int
    ) -> None:
        fields = {
            **_fields(row, message),
            "attempt": self.failures,
            "error": f"{type(exc).__name__}: {exc}",
            "broker": link.name,
            "released": left,  # rows of this round left for later: it and those behind it
        }
        log_fact("publish_failed", logging.WARNING, fields)


def _fields(row: Any, message: Message) -> dict[str, Any]:
    return {
        "event_type": row.event_type,
        "event_id": message.event_id,
        "correlation_id": row.correlation_id,
        "causation_id": row.causation_id,
        "channel": row.channel,
        "model_revision": row.model_revision or UNKNOWN_REVISION,
    }
