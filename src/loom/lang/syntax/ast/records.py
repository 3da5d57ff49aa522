"""The declared records of a context that are not aggregates: enums, events, value objects,
payloads."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.members import Field, Invariant, Renamed


@dataclass(eq=False)
class Enum:
    name: str
    name_span: Span
    members: list[tuple[str, Span]]
    span: Span
    # `Closed renamed from Shut`: the members renamed, by their index in `members`
    renamed_from: dict[int, Renamed] = field(default_factory=dict)
    # `Paid terminal`: the members declared terminal states (a way out is not expected of them)
    terminal: set[str] = field(default_factory=set)


@dataclass(eq=False)
class Event:
    name: str
    name_span: Span
    fields: list[Field]  # never immutable; a default is what an emit that omits the field gives
    span: Span
    renamed_from: Renamed | None = None


@dataclass(eq=False)
class ValueObject:
    """`value Money { amount: decimal, currency: string  invariant amount >= 0 }`."""

    name: str
    name_span: Span
    fields: list[Field]
    invariants: list[Invariant]
    span: Span


@dataclass(eq=False)
class Payload:
    """`command Name { … }` (or `query`, `response`, `error`): a transport record, in scope only as a
    workflow `create` parameter and in a commandHandler / queryHandler contract."""

    kind: str  # "command" | "query" | "response" | "error"
    name: str
    name_span: Span
    fields: list[Field]
    span: Span
