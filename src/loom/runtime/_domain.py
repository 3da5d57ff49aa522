"""Base classes of generated aggregates and events."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar
from uuid import UUID


class DomainEvent:
    """Generated events subclass this as `@dataclass(frozen=True)` and set `event_type`, and
    `former_event_types` when the model renamed the event (`renamed from`): the types a stored
    event of this class may still carry.

    `key_field` names the field whose value is the event's correlation key on a broker (the
    key one consumer applies events in order of); None: its first id field (`event_key`)."""

    __slots__ = ()
    event_type: ClassVar[str] = "DomainEvent"
    former_event_types: ClassVar[tuple[str, ...]] = ()
    key_field: ClassVar[str | None] = None


class AggregateRoot:
    """Generated aggregates subclass this as `@dataclass(eq=False)`.

    Bookkeeping lives in plain attributes, not dataclass fields: `_loom_version` (0 = never
    saved) and `_loom_events` (raised, not yet taken by a repository save)."""

    if TYPE_CHECKING:
        id: UUID

    _loom_version: int = 0
    _loom_events: list[DomainEvent] | None = None

    @property
    def version(self) -> int:
        """The stored version (0 = never saved); read-only, advanced by `Repository.save`."""
        return self._loom_version

    def _raise_event(self, event: DomainEvent) -> None:
        events = self._loom_events
        if events is None:
            self._loom_events = [event]
        else:
            events.append(event)

    def _take_events(self) -> list[DomainEvent]:
        events = self._loom_events
        if not events:
            return []
        self._loom_events = None
        return events
