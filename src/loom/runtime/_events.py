"""In-process event bus: handlers run after commit, in order; failures are logged, never raised."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from . import clock
from ._domain import DomainEvent
from ._ids import new_id

logger = logging.getLogger("loom.events")

Handler = Callable[[Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class EventEnvelope:
    """Delivery metadata of one dispatched event; the domain event itself stays clean."""

    event_id: UUID
    event_type: str
    occurred_at: datetime
    event: DomainEvent


_current: ContextVar[EventEnvelope | None] = ContextVar("loom_event_envelope", default=None)


def current_envelope() -> EventEnvelope | None:
    """The envelope of the event being handled (inside a handler), else None."""
    return _current.get()


def _handler_name(handler: Any) -> str:
    name = getattr(handler, "__qualname__", None) or type(handler).__qualname__
    module = getattr(handler, "__module__", None)
    return f"{module}.{name}" if module else str(name)


class EventBus:
    """Subscribe async handlers per event class (a handler for `DomainEvent` sees every event)."""

    def __init__(self) -> None:
        self._handlers: dict[type, list[Handler]] = {}
        self._resolved: dict[type, tuple[Handler, ...]] = {}

    def subscribe(self, event_type: type[DomainEvent], handler: Handler) -> None:
        self._handlers.setdefault(event_type, []).append(handler)
        self._resolved.clear()

    def unsubscribe(self, event_type: type[DomainEvent], handler: Handler) -> None:
        handlers = self._handlers.get(event_type, [])
        if handler in handlers:
            handlers.remove(handler)
        self._resolved.clear()

    def handlers_for(self, event_class: type) -> tuple[Handler, ...]:
        found = self._resolved.get(event_class)
        if found is None:
            found = tuple(h for klass in event_class.__mro__ for h in self._handlers.get(klass, ()))
            self._resolved[event_class] = found
        return found

    @property
    def has_subscribers(self) -> bool:
        return bool(self._handlers)

    async def dispatch(self, events: Iterable[DomainEvent]) -> None:
        """Deliver each event to its handlers, in order. Never raises for a handler failure."""
        if not self._handlers:
            return
        for event in events:
            handlers = self.handlers_for(type(event))
            if not handlers:
                continue
            envelope = EventEnvelope(
                event_id=new_id(),
                event_type=getattr(event, "event_type", type(event).__name__),
                occurred_at=clock.now(),
                event=event,
            )
            token = _current.set(envelope)
            try:
                for handler in handlers:
                    try:
                        await handler(event)
                    except Exception as exc:  # noqa: BLE001 - a reactor never fails the request
                        _log_failure(handler, envelope, exc)
            finally:
                _current.reset(token)


def _log_failure(handler: Any, envelope: EventEnvelope, exc: BaseException) -> None:
    logger.error(
        json.dumps(
            {
                "level": "error",
                "event": "reactor_failed",
                "handler": _handler_name(handler),
                "event_type": envelope.event_type,
                "event_id": str(envelope.event_id),
                "error": f"{type(exc).__name__}: {exc}",
            }
        )
    )
