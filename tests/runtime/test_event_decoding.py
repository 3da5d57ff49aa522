"""Stored events decode under a newer model (issue 11 §4): the codec and the bus's type look-up,
on event classes shaped as the generator writes them (the HTTP path is tests/e2e/
test_event_evolution.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, ClassVar

from loom.runtime import DomainEvent, EventBus, formerly
from loom.runtime.values.codec import decode, encode


@dataclass(frozen=True, kw_only=True)
class Deposited(DomainEvent):
    event_type: ClassVar[str] = "Bank.Deposited"
    former_event_types: ClassVar[tuple[str, ...]] = ("Bank.Credited",)
    amount: int
    owner: Annotated[str, formerly("owner", "holder")]
    source: str = "web"
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Credited(DomainEvent):
    """A newer event that took the old name back: the current type wins over a former one."""

    event_type: ClassVar[str] = "Bank.Credited"
    amount: int


def test_an_old_payload_decodes_with_defaults_and_old_keys() -> None:
    got = decode(Deposited, '{"amount": 5, "holder": "ann"}')
    assert got == Deposited(amount=5, owner="ann", source="web", tags=[])
    # a payload with the new key reads it; the old one, if both are there, is ignored
    newer = decode(Deposited, '{"amount": 1, "owner": "bob", "holder": "x"}')
    assert isinstance(newer, Deposited) and newer.owner == "bob"


def test_encoding_uses_the_new_names() -> None:
    text = encode(Deposited(amount=2, owner="cy"))
    assert '"owner":"cy"' in text and "holder" not in text
    assert decode(Deposited, text) == Deposited(amount=2, owner="cy")


def test_the_bus_finds_a_renamed_event_by_its_old_type() -> None:
    bus = EventBus()
    bus.register(Deposited)
    assert bus.event_class("Bank.Deposited") is Deposited
    assert bus.event_class("Bank.Credited") is Deposited
    assert bus.event_class("Bank.Other") is None
    bus.register(Credited)
    assert bus.event_class("Bank.Credited") is Credited
