"""Events as JSON text for the outbox: one pydantic TypeAdapter per event class, built once.

Decimals travel as strings (exact), datetimes as ISO 8601, UUIDs and enums as their values.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from ._domain import DomainEvent

_adapters: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    found = _adapters.get(cls)
    if found is None:
        found = _adapters[cls] = TypeAdapter(cls)
    return found


def encode(event: DomainEvent) -> str:
    return _adapter(type(event)).dump_json(event).decode()


def decode(cls: type[DomainEvent], payload: str) -> DomainEvent:
    event: DomainEvent = _adapter(cls).validate_json(payload)
    return event
