"""A context, holding every declaration of one `context { … }`, and the whole model."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from loom.model.ir.aggregates import Aggregate, Criterion, Repository, Retrieval
from loom.model.ir.events import Channel, Event
from loom.model.ir.origin import Origin
from loom.model.ir.records import Enum, Payload, ValueObject
from loom.model.ir.resources import Resource
from loom.model.ir.services import DomainService
from loom.model.ir.topology import ChannelSource, Deployable
from loom.model.ir.workflows import Handler, Projection, Timer, Workflow

T = TypeVar("T")


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
    # declarations by name (or by their aggregate), per kind, each indexed on its first look-up: the
    # code generator looks up an aggregate, event or repository for every one it emits, and a scan
    # of the context each time made generating a large context quadratic in its size
    _index: dict[str, dict[str, list[Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def _by(self, kind: str, items: Iterable[T], key: Callable[[T], str]) -> dict[str, list[T]]:
        """`items` grouped by `key`, in declaration order (kept for later look-ups under `kind`)."""
        index = self._index.get(kind)
        if index is None:
            index = self._index[kind] = {}
            for item in items:
                index.setdefault(key(item), []).append(item)
        return cast(dict[str, list[T]], index)

    def aggregate(self, name: str) -> Aggregate:
        return self._by("aggregates", self.aggregates, _name)[name][0]

    def event(self, name: str) -> Event:
        return self._by("events", self.events, _name)[name][0]

    def enum(self, name: str) -> Enum:
        return self._by("enums", self.enums, _name)[name][0]

    def criterion(self, name: str) -> Criterion:
        return self._by("criteria", self.criteria, _name)[name][0]

    def retrieval(self, name: str) -> Retrieval:
        return self._by("retrievals", self.retrievals, _name)[name][0]

    def repository(self, name: str) -> Repository:
        return self._by("repositories", self.repositories, _name)[name][0]

    def handler(self, name: str) -> Handler:
        return self._by("handlers", self.handlers, _name)[name][0]

    @property
    def records(self) -> tuple[ValueObject | Payload, ...]:
        """The value objects, then the payloads."""
        out: tuple[ValueObject | Payload, ...] = (*self.values, *self.payloads)
        return out

    def record(self, name: str) -> ValueObject | Payload:
        """The value object or payload of that name."""
        return self._by("records", self.records, _name)[name][0]

    def repository_for(self, aggregate: str) -> Repository | None:
        found = self._by("repository_for", self.repositories, _aggregate).get(aggregate)
        return found[0] if found else None

    def criteria_of(self, aggregate: str) -> list[Criterion]:
        """The criteria of an aggregate, in declaration order."""
        return list(self._by("criteria_of", self.criteria, _aggregate).get(aggregate, ()))

    def retrievals_of(self, aggregate: str) -> list[Retrieval]:
        """The retrievals of an aggregate, in declaration order."""
        return list(self._by("retrievals_of", self.retrievals, _aggregate).get(aggregate, ()))


def _name(declaration: Any) -> str:
    return str(declaration.name)


def _aggregate(declaration: Any) -> str:
    return str(declaration.aggregate)


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
