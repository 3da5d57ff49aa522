"""A context and its declarations, and a whole file."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.aggregates import Aggregate, Criterion, Repository, Retrieval
from loom.lang.syntax.ast.records import Enum, Event, Payload, ValueObject
from loom.lang.syntax.ast.services import DomainService
from loom.lang.syntax.ast.settings import Channel, ChannelSource, Deployable, Resource
from loom.lang.syntax.ast.workflows import Handler, Projection, Timer, Workflow

Decl = (
    Enum
    | Aggregate
    | Repository
    | Event
    | Workflow
    | Criterion
    | Retrieval
    | Handler
    | DomainService
    | ValueObject
    | Payload
    | Projection
    | Channel
    | Resource
    | Timer
)


@dataclass(eq=False)
class Context:
    name: str
    name_span: Span
    decls: list[Decl]
    span: Span
    tenanted: Span | None = None  # `context Billing tenanted { … }`: the word's span


@dataclass(eq=False)
class File:
    name: str
    contexts: list[Context] = field(default_factory=list)
    deployables: list[Deployable] = field(default_factory=list)
    channel_sources: list[ChannelSource] = field(default_factory=list)
