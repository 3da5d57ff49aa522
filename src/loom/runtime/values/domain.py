"""Base classes of generated aggregates and events, and what a save checks of an aggregate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from loom.runtime.values import ints
from loom.runtime.values.decimals import ArithmeticRefused
from loom.runtime.values.times import TimeRefused


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

    def check_invariants(self) -> None:
        """Refuse (422) an aggregate that breaks an invariant or a bound of its model. Generated
        factories, operations and update routes call it after they change the aggregate;
        generated aggregates with invariants or bounded fields override it."""

    def _check_stored(self) -> None:
        """Refuse (422) an aggregate whose row could not be read back: an int beyond 64 bits in
        a field, a derived value with no value. `Repository.save` calls it before it writes, so a
        refused save leaves the table as it was. Generated aggregates with int fields or derived
        values override it."""

    def _raise_event(self, event: DomainEvent) -> None:
        check_event(event)
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


def derived(aggregate: AggregateRoot, attr: str, label: str) -> Any:
    """The derived value `attr` of `aggregate`, computed where a save checks it: a refusal of its
    arithmetic comes back naming it (`derived Ev.sq: the result of `*` does not fit: …`)."""
    try:
        return getattr(aggregate, attr)
    except (ArithmeticRefused, TimeRefused) as err:
        raise type(err)(f"{label}: {err.detail}") from None


def check_event(event: DomainEvent) -> None:
    """Refuse an event carrying an int beyond 64 bits: no consumer could decode it."""
    if not ints.all_fit(event):  # the label is worded only for a refusal
        ints.fit(event, f"event {event.event_type}")
