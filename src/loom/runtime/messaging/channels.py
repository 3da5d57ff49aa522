"""Durable channels: which events go through the outbox, and how their delivery is retried."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

Retention = Literal["work", "log"]


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """A durable consumer: one reaction (its stable consumer name, docs/events.md "Names") reading
    the event types it handles from one channel."""

    name: str
    channel: str
    event_types: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before retry n (1-based): `initial * factor ** (n - 1)`, at most `maximum`."""

    initial: timedelta = timedelta(seconds=1)
    factor: float = 2.0
    maximum: timedelta = timedelta(minutes=5)

    def __post_init__(self) -> None:
        if self.initial < timedelta(0) or self.maximum < timedelta(0):
            raise ValueError("backoff delays cannot be negative")
        if self.factor < 1:
            raise ValueError("backoff factor must be at least 1")

    def delay(self, attempt: int) -> timedelta:
        """The wait after the `attempt`-th failed delivery."""
        if attempt < 1:
            return timedelta(0)
        # grow in float seconds and cap before building a timedelta: a large attempt must not
        # overflow the multiplication
        seconds = self.initial.total_seconds()
        cap = self.maximum.total_seconds()
        for _ in range(attempt - 1):
            seconds *= self.factor
            if seconds >= cap:
                return self.maximum
        return min(timedelta(seconds=seconds), self.maximum)


@dataclass(frozen=True, slots=True)
class Channel:
    """A durable channel: the events it carries (by `event_type`, e.g. "Orders.OrderPlaced") are
    written to the outbox in the writing transaction and delivered by the relay, at least once.

    retention: "work" deletes a row once delivered; "log" keeps it (status delivered).
    max_attempts: deliveries before the row is dead-lettered.
    source: the `channelSource` the channel rides (None: the default broker), used only when the
    service is given a transport for it (`create_app(brokers=...)`).
    consumers: the durable consumers that read the channel from a broker (every reaction to one
    of its events that runs in another deployable than the event's producer), created up front by
    every deployable that publishes to or consumes the channel."""

    name: str
    events: Sequence[str]
    retention: Retention = "work"
    max_attempts: int = 5
    backoff: Backoff = field(default_factory=Backoff)
    source: str | None = None
    consumers: Sequence[ConsumerSpec] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a channel needs a name")
        if self.retention not in ("work", "log"):
            raise ValueError(f"channel {self.name}: retention must be 'work' or 'log'")
        if self.max_attempts < 1:
            raise ValueError(f"channel {self.name}: max_attempts must be at least 1")
        object.__setattr__(self, "events", tuple(self.events))
        object.__setattr__(self, "consumers", tuple(self.consumers))


DEFAULT_CHANNEL = Channel("(unknown)", ())


def route_table(channels: Iterable[Channel]) -> tuple[dict[str, Channel], dict[str, Channel]]:
    """(event type -> channel, channel name -> channel); an event on two channels is an error."""
    routes: dict[str, Channel] = {}
    by_name: dict[str, Channel] = {}
    for channel in channels:
        if channel.name in by_name:
            raise ValueError(f"two channels are named {channel.name!r}")
        by_name[channel.name] = channel
        for event_type in channel.events:
            other = routes.get(event_type)
            if other is not None:
                raise ValueError(
                    f"event {event_type} is carried by two channels ({other.name}, {channel.name})"
                )
            routes[event_type] = channel
    return routes, by_name


def channel_named(by_name: Mapping[str, Channel], name: str) -> Channel:
    """The channel a stored row names; a row of a channel no longer configured keeps the
    defaults (work retention, 5 attempts) so it is still delivered or dead-lettered."""
    return by_name.get(name, DEFAULT_CHANNEL)
