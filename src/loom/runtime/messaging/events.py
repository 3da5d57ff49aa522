"""The event bus: named subscriptions, the event-type registry, and delivery to handlers.

Two paths share `EventBus.deliver`: in-process dispatch right after a commit (`dispatch`), and the
outbox relay. A handler failure is logged (`reactor_failed`) and reported to the caller, never
raised; the relay uses the report to retry.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from uuid import UUID

from loom.runtime.messaging.key_order import KeyOrder, OutOfOrder
from loom.runtime.values import clock
from loom.runtime.values.codec import decode
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.ids import new_id
from loom.runtime.values.logs import _correlation, current_correlation_id, log_fact
from loom.runtime.values.metrics import APPLIED, SKIPPED_DUPLICATE, Metrics
from loom.runtime.values.principal import _current as _principal
from loom.runtime.values.principal import system_of

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer

Handler = Callable[[Any], Awaitable[None]]
# what the logs say for an event, or a service, of no known model revision
UNKNOWN_REVISION = "unknown"


# Not frozen, as `transports.base.Message` is not (why there): made for every event dispatched.
@dataclass(slots=True)
class EventEnvelope:
    """Delivery metadata of one event; the domain event itself stays clean.

    correlation_id: shared by every event of one chain (the request's X-Correlation-Id, else the
    root event's id); causation_id: the id of the event whose handler emitted this one;
    model_revision: the revision of the model whose service wrote the event (None: unknown, a
    row written before events carried one, or a service built without a revision)."""

    event_id: UUID
    event_type: str
    occurred_at: datetime
    event: DomainEvent
    correlation_id: str = ""
    causation_id: str | None = None
    model_revision: str | None = None
    # the tenant of the principal that raised it (a request's, or a reaction's inherited one): its
    # in-process reactions run as the system principal of that tenant
    tenant: str | None = None


@dataclass(slots=True)  # not frozen: see EventEnvelope
class Delivery:
    """The handler being run: its consumer name, the envelope, and whether it came from the
    outbox (only durable deliveries can be repeated, so only they record an inbox row); for a
    broker message with key counts, its place in its key's order (`messaging/key_order.py`)."""

    consumer: str
    envelope: EventEnvelope
    durable: bool
    order: KeyOrder | None = None


class AlreadyHandled(Exception):
    """Raised by `service.reaction()` when this consumer already processed this event; the
    dispatcher treats it as success (`event_skipped_duplicate`)."""

    traced_as_failure = False  # its unit of work's span is not failed (`values/traces.py`)


class Undeliverable(Exception):
    """A stored or received event that no registered class decodes (its message says why)."""


class Subscription(NamedTuple):
    name: str
    handler: Handler


_delivery: ContextVar[Delivery | None] = ContextVar("loom_delivery", default=None)


def current_delivery() -> Delivery | None:
    return _delivery.get()


def current_envelope() -> EventEnvelope | None:
    """The envelope of the event being handled (inside a handler), else None."""
    delivery = _delivery.get()
    return None if delivery is None else delivery.envelope


def new_envelope(
    event: DomainEvent, model_revision: str | None, event_id: UUID | None = None
) -> EventEnvelope:
    """An envelope for an event raised now by a service of `model_revision`, inheriting the ids
    of the running request/delivery."""
    event_id = event_id or new_id()
    parent = current_envelope()
    correlation = current_correlation_id() or (parent.correlation_id if parent else None)
    return EventEnvelope(
        event_id=event_id,
        event_type=event.event_type,
        occurred_at=clock.now(),
        event=event,
        correlation_id=correlation or str(event_id),
        causation_id=None if parent is None else str(parent.event_id),
        model_revision=model_revision,
        tenant=_principal.get().tenant,
    )


def envelope_fields(envelope: EventEnvelope) -> dict[str, Any]:
    return {
        "event_type": envelope.event_type,
        "event_id": str(envelope.event_id),
        "correlation_id": envelope.correlation_id,
        "causation_id": envelope.causation_id,
    }


def log_unrouted(event_type: str, handler: str) -> None:
    """`event_unrouted`: an `on` reactor found no workflow instance for the event's key."""
    envelope = current_envelope()
    fields: dict[str, Any] = {"handler": handler, "event_type": event_type}
    if envelope is not None:
        fields.update(envelope_fields(envelope), event_type=event_type)
    else:
        fields["correlation_id"] = current_correlation_id()
    log_fact("event_unrouted", logging.WARNING, fields)


def _default_name(handler: Any) -> str:
    name = getattr(handler, "__qualname__", None) or type(handler).__qualname__
    module = getattr(handler, "__module__", None)
    return f"{module}.{name}" if module else str(name)


class EventBus:
    """Subscribe async handlers per event class (a handler for `DomainEvent` sees every event).

    `model_revision` is the revision of the model whose event classes the bus carries: every
    event raised through it is stamped with it, in-process and in the outbox."""

    def __init__(self, model_revision: str | None = None) -> None:
        self.model_revision = model_revision
        self._handlers: dict[type, list[Subscription]] = {}
        self._resolved: dict[type, tuple[Subscription, ...]] = {}
        self._types: dict[str, type[DomainEvent]] = {}
        # the types renamed events had (`renamed from`), for stored events written before
        self._former: dict[str, type[DomainEvent]] = {}
        # the app's instruments (create_app gives the one its /metrics reads)
        self.metrics = Metrics()
        # the service's spans (`values/traces.py`); None: not traced
        self.tracer: Tracer | None = None

    def subscribe(
        self, event_type: type[DomainEvent], handler: Handler, *, name: str | None = None
    ) -> None:
        """Run `handler(event)` for every `event_type` event. `name` is the stable consumer name
        (logs, inbox key), e.g. "Inventory.ReserveStock.on_order_placed"."""
        subs = self._handlers.setdefault(event_type, [])
        taken = {s.name for s in subs}
        if name is None:
            base = name = _default_name(handler)
            n = 1
            while name in taken:  # two closures of one function: keep them apart
                n += 1
                name = f"{base}#{n}"
        elif name in taken:
            raise ValueError(f"a handler named {name!r} already handles {event_type.__name__}")
        subs.append(Subscription(name, handler))
        self._resolved.clear()
        if event_type is not DomainEvent:
            self.register(event_type)

    def unsubscribe(self, event_type: type[DomainEvent], handler: Handler) -> None:
        subs = self._handlers.get(event_type, [])
        subs[:] = [s for s in subs if s.handler != handler]
        self._resolved.clear()

    def register(self, event_class: type[DomainEvent]) -> None:
        """Make `event_class` decodable from the outbox by its `event_type`, and by the types it
        had before a rename."""
        key = event_class.event_type
        known = self._types.get(key)
        if known is not None and known is not event_class:
            raise ValueError(f"two event classes have the event type {key!r}")
        self._types[key] = event_class
        for former in event_class.former_event_types:
            self._former.setdefault(former, event_class)

    def event_class(self, event_type: str) -> type[DomainEvent] | None:
        """The class of a stored event's type: the event of that type now, else the event renamed
        from it."""
        return self._types.get(event_type) or self._former.get(event_type)

    def decode_stored(
        self,
        *,
        event_id: UUID,
        event_type: str,
        payload: str,
        occurred_at: datetime,
        correlation_id: str,
        causation_id: str | None,
        model_revision: str | None,
        tenant: str | None = None,
    ) -> EventEnvelope:
        """The envelope of an event read back from an outbox row or a broker message: decoded by
        the class of its (possibly former) type, `Undeliverable` when none decodes it. `tenant`
        is the one the event was raised in: its reactions run as that tenant's system principal."""
        cls = self.event_class(event_type)
        if cls is None:
            raise Undeliverable(f"no event class is registered for {event_type}")
        try:
            event = decode(cls, payload)
        except Exception as exc:  # noqa: BLE001 - any decoding failure is the event's
            raise Undeliverable(f"the payload does not decode as {cls.__name__}: {exc}") from None
        return EventEnvelope(
            event_id=event_id,
            event_type=cls.event_type,  # a renamed event's current type, not the stored one
            occurred_at=occurred_at,
            event=event,
            correlation_id=correlation_id,
            causation_id=causation_id,
            model_revision=model_revision,
            tenant=tenant,
        )

    def handlers_for(self, event_class: type) -> tuple[Subscription, ...]:
        found = self._resolved.get(event_class)
        if found is None:
            found = tuple(s for klass in event_class.__mro__ for s in self._handlers.get(klass, ()))
            self._resolved[event_class] = found
        return found

    @property
    def has_subscribers(self) -> bool:
        return any(self._handlers.values())

    async def dispatch(self, events: Iterable[DomainEvent]) -> None:
        """In-process: deliver each event to its handlers, in order. Never raises for a handler
        failure and never retries (the request already has its answer)."""
        if not self._handlers:
            return
        for event in events:
            subs = self.handlers_for(type(event))
            if subs:
                await self.deliver(new_envelope(event, self.model_revision), subs)

    async def deliver(
        self,
        envelope: EventEnvelope,
        subs: Iterable[Subscription],
        *,
        channel: str | None = None,
        attempt: int | None = None,
        order: KeyOrder | None = None,
    ) -> list[str]:
        """Run every handler for one event, as SYSTEM (of the event's tenant, if it has one)
        with the event's ids in context; answer the errors of the handlers that failed (empty:
        delivered). A handler whose turn in `order` has not come (`OutOfOrder`) ends the
        delivery: `order.blocked` says so, and the caller delivers it again later."""
        durable = channel is not None
        where: dict[str, Any] = envelope_fields(envelope)
        if durable:
            where.update(attempt=attempt, channel=channel)
        # which model wrote what each consumer reads: the line to look for when a new model's
        # consumer meets an event an older one wrote (or the other way round, in a rolling deploy)
        where["model_revision"] = envelope.model_revision or UNKNOWN_REVISION
        where["reader_revision"] = self.model_revision or UNKNOWN_REVISION
        log_fact("event_dispatched", logging.INFO, where)
        errors: list[str] = []
        correlation = _correlation.set(envelope.correlation_id)
        principal = _principal.set(system_of(envelope.tenant))
        tracer = self.tracer
        span = None
        try:
            for sub in subs:
                token = _delivery.set(Delivery(sub.name, envelope, durable, order))
                if tracer is not None:
                    span = tracer.reaction(sub.name, envelope.event_type)
                try:
                    await sub.handler(envelope.event)
                except OutOfOrder:
                    break
                except AlreadyHandled:
                    self.metrics.delivered(channel or "", sub.name, SKIPPED_DUPLICATE)
                    log_fact(
                        "event_skipped_duplicate", logging.INFO, {"handler": sub.name, **where}
                    )
                    if span is not None:
                        span[0].add_event("skipped_duplicate")
                except Exception as exc:  # noqa: BLE001 - a reaction never fails its cause
                    error = f"{type(exc).__name__}: {exc}"
                    errors.append(f"{sub.name}: {error}")
                    fields = {"handler": sub.name, **where, "error": error}
                    log_fact("reactor_failed", logging.ERROR, fields)
                    if tracer is not None and span is not None:
                        tracer.ended_with(span, exc)
                else:
                    if durable:
                        self.metrics.delivered(channel or "", sub.name, APPLIED)
                    log_fact("event_handled", logging.INFO, {"handler": sub.name, **where})
                finally:
                    _delivery.reset(token)
                    if tracer is not None and span is not None:
                        tracer.close(span)
                        span = None
        finally:
            _principal.reset(principal)
            _correlation.reset(correlation)
        return errors
