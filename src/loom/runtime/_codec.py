"""Events as JSON text for the outbox: one pydantic TypeAdapter per event class, built once.

Decimals travel as strings (exact), datetimes as ISO 8601, UUIDs and enums as their values.

An event stored by a previous model decodes under the current one: a field added with a default
gets it (the dataclass default), a field renamed (`renamed from`) is read from its old key too
(`formerly`, in the field's annotation); the relay finds a renamed event's class by its old type.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, TypeAdapter

from ._domain import DomainEvent

_adapters: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    found = _adapters.get(cls)
    if found is None:
        found = _adapters[cls] = TypeAdapter(cls)
    return found


def formerly(key: str, old: str) -> Any:
    """`Annotated[T, formerly("owner", "holder")]` on a generated event field: decoded from `owner`,
    or from `holder`, the key an event stored before the rename has. Encoded as `owner`."""
    return Field(validation_alias=AliasChoices(key, old))


def encode(event: DomainEvent) -> str:
    return _adapter(type(event)).dump_json(event).decode()


def decode(cls: type[DomainEvent], payload: str) -> DomainEvent:
    event: DomainEvent = _adapter(cls).validate_json(payload)
    return event
