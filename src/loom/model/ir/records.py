"""The declared records of a context that are not aggregates: enums, value objects, payloads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loom.model.ir.members import Field, Invariant
from loom.model.ir.origin import Origin


@dataclass(frozen=True, slots=True)
class Enum:
    name: str
    members: tuple[str, ...]
    origin: Origin
    # `Closed renamed from Shut`: (member, the name it had in the previous model), in member order
    renamed_from: tuple[tuple[str, str], ...] = ()
    # `Paid terminal`: the members declared terminal states, in member order
    terminal: tuple[str, ...] = ()

    def old_name(self, member: str) -> str | None:
        """The name `member` had in the previous model, None when it was not renamed."""
        return next((old for m, old in self.renamed_from if m == member), None)


@dataclass(frozen=True, slots=True)
class ValueObject:
    """`value Money { amount: decimal, currency: string  invariant amount >= 0 }`: an immutable
    record compared by its fields. Its invariants (over its own fields, read as SelfField) hold for
    every constructed value; a stored one is not checked again when it is read back."""

    name: str
    context: str
    fields: tuple[Field, ...]
    invariants: tuple[Invariant, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Payload:
    """`command` / `query` / `response` / `error` `Name { fields }`: a transport record of a workflow
    `create` or a handler contract."""

    kind: Literal["command", "query", "response", "error"]
    name: str
    context: str
    fields: tuple[Field, ...]
    origin: Origin
