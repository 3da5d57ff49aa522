"""A context, holding every declaration of one `context { … }`, and the whole model."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.model.ir.aggregates import Aggregate, Criterion, Repository, Retrieval
from loom.model.ir.events import Channel, Event
from loom.model.ir.origin import Origin
from loom.model.ir.records import Enum, Payload, ValueObject
from loom.model.ir.resources import Resource
from loom.model.ir.services import DomainService
from loom.model.ir.topology import ChannelSource, Deployable
from loom.model.ir.workflows import Handler, Projection, Timer, Workflow


@dataclass(frozen=True, slots=True)
class Context:
    name: str
    enums: tuple[Enum, ...]
    aggregates: tuple[Aggregate, ...]
    repositories: tuple[Repository, ...]
    events: tuple[Event, ...]
    workflows: tuple[Workflow, ...]
    origin: Origin
    criteria: tuple[Criterion, ...] = ()
    retrievals: tuple[Retrieval, ...] = ()
    handlers: tuple[Handler, ...] = ()
    services: tuple[DomainService, ...] = ()
    values: tuple[ValueObject, ...] = ()
    payloads: tuple[Payload, ...] = ()
    projections: tuple[Projection, ...] = ()
    channels: tuple[Channel, ...] = ()
    timers: tuple[Timer, ...] = ()
    # `resource NAME { kind: api … }`: the bindings its bodies call other contexts' handlers through
    resources: tuple[Resource, ...] = ()
    # `context Billing tenanted { … }`: every aggregate row carries the tenant of the principal
    # that created it, and every read, write and route is scoped to the caller's tenant
    tenanted: bool = False

    def aggregate(self, name: str) -> Aggregate:
        return next(a for a in self.aggregates if a.name == name)

    @property
    def records(self) -> tuple[ValueObject | Payload, ...]:
        """The value objects, then the payloads."""
        out: tuple[ValueObject | Payload, ...] = (*self.values, *self.payloads)
        return out

    def record(self, name: str) -> ValueObject | Payload:
        """The value object or payload of that name."""
        return next(r for r in self.records if r.name == name)

    def repository_for(self, aggregate: str) -> Repository | None:
        return next((r for r in self.repositories if r.aggregate == aggregate), None)


@dataclass(frozen=True, slots=True)
class Model:
    """A whole model: every context of every file given, in first-appearance order."""

    contexts: tuple[Context, ...]
    sources: tuple[str, ...] = field(default=())
    # a digest of the model's source text (loom.lang.lower.revision), stamped on every event a
    # service of this model writes; "" for a model built by hand
    revision: str = ""
    # the declared deployables and channel sources (topology.py); `deployables.deployables_of`
    # answers the implicit deployable when none is declared
    deployables: tuple[Deployable, ...] = ()
    channel_sources: tuple[ChannelSource, ...] = ()
