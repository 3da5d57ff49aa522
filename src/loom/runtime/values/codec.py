"""Events as JSON text for the outbox: one pydantic TypeAdapter per event class, built once.

Decimals travel as strings (exact), datetimes as ISO 8601, UUIDs and enums as their values.
Fields are keyed by their model names (`failPayment`), the spelling of the HTTP surface and of the
AsyncAPI document: a generated class whose Python names differ says so (`wire_names`). Payloads
written before that, keyed by the Python names (`fail_payment`), still decode.

An event stored by a previous model decodes under the current one: a field added with a default
gets it (the dataclass default), a field renamed (`renamed from`) is read from its old key too
(`formerly`, in the field's annotation); the relay finds a renamed event's class by its old type.
"""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, ConfigDict, Field, TypeAdapter

from loom.runtime.values.domain import DomainEvent

_adapters: dict[type, TypeAdapter[Any]] = {}


def _adapter(cls: type) -> TypeAdapter[Any]:
    found = _adapters.get(cls)
    if found is None:
        found = _adapters[cls] = TypeAdapter(cls)
    return found


def wire_names(**names: str) -> ConfigDict:
    """`__pydantic_config__` of a generated event, value object or payload class:
    `wire_names(fail_payment="failPayment")` names each field whose Python name differs from its
    model name. Encoded under the
    model names; decoded from either spelling (a payload stored or published by an earlier build
    has the Python names)."""
    table = dict(names)
    return ConfigDict(
        alias_generator=lambda name: table.get(name, name),
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


def formerly(*keys: str) -> Any:
    """`Annotated[T, formerly("ownerName", "owner_name", "holder")]` on a generated event field:
    decoded from any of `keys` (its model name, its Python name, and those it had before a
    rename, which an event stored before the rename is keyed by). Encoded under its model name."""
    return Field(validation_alias=AliasChoices(*keys))


def encode(event: DomainEvent) -> str:
    return _adapter(type(event)).dump_json(event).decode()


def decode(cls: type[DomainEvent], payload: str) -> DomainEvent:
    event: DomainEvent = _adapter(cls).validate_json(payload)
    return event
