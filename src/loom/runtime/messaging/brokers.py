"""Which broker each durable channel rides for one deployable, what the deployable publishes and
consumes there, and its connection to each broker.

A deployable holds some contexts (`contexts`; None: all of them, one deployable for the whole
model). An event is produced here when its type's context (`Orders` of `Orders.OrderPlaced`) is
one of them; a consumer is here when its name's context (`Inventory` of
`Inventory.reserveStock.on(Orders.OrderPlaced)`) is. A channel is on a broker when `brokers` has a
transport for its source (`""`: the default broker, for channels that name none).

Events between two contexts of one deployable never take the broker hop: the relay delivers them
locally from the outbox, as without a broker. Only an event crossing deployables needs the broker,
and a deployable whose channel would have to carry one with no broker configured does not start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from loom.model.messaging import DEFAULT_BROKER
from loom.runtime.messaging.broker_config import DEFAULT_SOURCE, variable_for
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.events import EventBus, Subscription
from loom.runtime.messaging.transports.base import (
    ConsumerSpec,
    StreamSpec,
    Transport,
    TransportError,
)
from loom.runtime.values.errors import refused
from loom.runtime.values.logs import log_fact


def context_of(name: str) -> str:
    """The context an event type or a consumer name belongs to: its first dotted part."""
    return name.split(".", 1)[0]


def broker_name(source: str) -> str:
    """A source as the logs name it (`default` for the default broker)."""
    return source or DEFAULT_BROKER


def broker_hint(source: str) -> str:
    """How to give the broker of `source` (docs/events.md, "Channels on a broker")."""
    flag = "--broker URL" if source == DEFAULT_SOURCE else f"--broker {source}=URL"
    return f"{flag} or {variable_for(source)}=URL"


@dataclass(frozen=True, slots=True)
class Consumed:
    """A durable consumer this deployable runs: a local reaction to events of another deployable,
    read from `channel` on the broker behind `link`."""

    spec: ConsumerSpec
    channel: Channel
    subs: tuple[Subscription, ...]
    link: BrokerLink


class BrokerLink:
    """One transport: connected and its streams ensured on the first `open`, retried by the next
    `open` after a failure (the relay's publish, a consumer's fetch). Once connected, reconnecting
    after an outage is the transport client's business."""

    def __init__(self, source: str, transport: Transport) -> None:
        self.source = source
        self.transport = transport
        self.streams: dict[str, StreamSpec] = {}
        self._connected = False
        self._ensured: set[str] = set()
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return broker_name(self.source)

    @property
    def ready(self) -> bool:
        return self._connected and self._ensured >= set(self.streams)

    def add(self, channel: Channel, consumers: Iterable[ConsumerSpec]) -> None:
        """Ensure `channel` with `consumers` too, beside the ones already added."""
        held = self.streams.get(channel.name)
        merged = {c.name: c for c in held.consumers} if held is not None else {}
        for spec in consumers:
            old = merged.get(spec.name)
            types = spec.event_types if old is None else (*old.event_types, *spec.event_types)
            merged[spec.name] = ConsumerSpec(spec.name, spec.channel, tuple(dict.fromkeys(types)))
        self.streams[channel.name] = StreamSpec(
            channel.name, channel.retention, tuple(merged.values())
        )
        self._ensured.discard(channel.name)

    def consumer(self, channel: str, name: str) -> ConsumerSpec:
        return next(c for c in self.streams[channel].consumers if c.name == name)

    async def open(self) -> None:
        """Connect and ensure every stream, unless already done (raises what the transport
        raises)."""
        if self.ready:
            return
        async with self._lock:
            if not self._connected:
                await self.transport.connect()
                self._connected = True
            for name, stream in self.streams.items():
                if name not in self._ensured:
                    await self.transport.ensure(stream)
                    self._ensured.add(name)

    async def check(self) -> None:
        """Raise `TransportError` unless connected, with every stream ensured, and the broker
        reachable now."""
        if not self.ready:
            raise TransportError("not connected yet (retried in the background)")
        await self.transport.check()

    async def close(self) -> None:
        if self._connected:
            self._connected = False
            self._ensured.clear()
            await self.transport.close()


class Brokers:
    """`service.brokers`: the deployable's contexts, its broker links, and (after `plan`) the
    consumers it runs."""

    def __init__(
        self,
        contexts: Sequence[str] | None,
        transports: Mapping[str, Transport] | None,
        channels: Sequence[Channel],
    ) -> None:
        self.contexts: frozenset[str] | None = None if contexts is None else frozenset(contexts)
        self.links = {source: BrokerLink(source, t) for source, t in (transports or {}).items()}
        self._channels = channels
        self.consumed: list[Consumed] = []
        self.planned = False

    def produces(self, event_type: str) -> bool:
        return self.contexts is None or context_of(event_type) in self.contexts

    def holds(self, consumer: str) -> bool:
        return self.contexts is None or context_of(consumer) in self.contexts

    def link_for(self, channel: Channel) -> BrokerLink | None:
        """The broker `channel` rides here, or None (its events stay in this deployable)."""
        return self.links.get(channel.source or DEFAULT_SOURCE)

    def publishing(self, channel: Channel, event_type: str) -> BrokerLink | None:
        """Where the relay publishes an outbox row: the channel's broker when the event is
        produced here and the broker carries the channel (a reader runs elsewhere, or it is a
        `log` channel). A row of another deployable's event is a consumer's dead letter being
        redriven: delivered locally only."""
        link = self.link_for(channel)
        if link is None or not self.produces(event_type) or channel.name not in link.streams:
            # no stream planned: every reader of the channel runs here and reads the outbox
            return None
        return link

    def plan(self, bus: EventBus) -> None:
        """Decide what each broker carries for this deployable (the streams to ensure, the
        consumers to run), or refuse to start (`StartupRefused`) when a channel must carry an
        event across deployables and has no broker."""
        missing: dict[str, list[tuple[Channel, str]]] = {}  # source -> what needs its broker
        self.consumed = []
        for channel in self._channels:
            link = self.link_for(channel)
            # the broker consumers this deployable declares: the other deployables' readers of
            # what it produces (created before they first start, so a `work` stream keeps the
            # messages for them), and its own readers of what other deployables produce. A
            # reader beside its producer reads the outbox, never the broker: declaring it would
            # keep a `work` stream's messages for a consumer nobody runs.
            remote = []
            for spec in channel.consumers:
                crossing = [t for t in spec.event_types if self.produces(t)]
                if crossing and not self.holds(spec.name):
                    if link is None:
                        what = _crossing(crossing[0], spec.name, "runs elsewhere")
                        missing.setdefault(_source(channel), []).append((channel, what))
                    remote.append(spec)
            # a `log` channel keeps what it carries on the broker for readers added later (a
            # replay from the start), so its stream is ensured whenever this deployable produces
            # on it; a `work` stream nobody else reads would only pile messages up
            produced = any(self.produces(t) for t in channel.events)
            if link is not None and (remote or (produced and channel.retention == "log")):
                link.add(channel, remote)
            for name, (types, subs) in _local_consumers(bus, channel, self.produces).items():
                if link is None:
                    what = _crossing(types[0], name, "runs here")
                    missing.setdefault(_source(channel), []).append((channel, what))
                    continue
                link.add(channel, (ConsumerSpec(name, channel.name, types),))
                spec = link.consumer(channel.name, name)
                self.consumed.append(Consumed(spec, channel, subs, link))
        if missing:
            raise refused([_no_broker(source, needs) for source, needs in missing.items()])
        self.planned = True

    async def open_all(self) -> None:
        """Connect to every broker now; one that cannot be reached is logged and retried in the
        background (by the consumers' fetches and the relay's publishes), never a refusal."""
        for link in self.links.values():
            if not link.streams:
                continue
            try:
                await link.open()
            except Exception as exc:  # noqa: BLE001 - any broker trouble is retried later
                _unavailable(link, exc)

    async def close_all(self) -> None:
        for link in self.links.values():
            try:
                await link.close()
            except Exception as exc:  # noqa: BLE001 - closing must not fail the shutdown
                _unavailable(link, exc)


def _unavailable(link: BrokerLink, exc: Exception) -> None:
    error = f"{type(exc).__name__}: {exc}"
    log_fact("broker_unavailable", logging.WARNING, {"error": error, "broker": link.name})


def _source(channel: Channel) -> str:
    return channel.source or DEFAULT_SOURCE


def _crossing(event_type: str, consumer: str, where: str) -> str:
    producer = "here" if where == "runs elsewhere" else "in another deployable"
    consumer_at = "in another deployable" if where == "runs elsewhere" else "here"
    return f"{event_type} (produced {producer}) to {consumer} (running {consumer_at})"


def _no_broker(source: str, needs: Sequence[tuple[Channel, str]]) -> str:
    """One sentence for a channel source without a broker: its channels that cross deployables,
    the first crossing as the example, and how to give the broker."""
    names = list(dict.fromkeys(channel.name for channel, _ in needs))
    which = f"channel {names[0]}" if len(names) == 1 else f"channels {', '.join(names)}"
    more = f" and {len(needs) - 1} more" if len(needs) > 1 else ""
    return (
        f"{which} must carry events between deployables ({needs[0][1]}{more}), and no broker "
        f"is configured for {'it' if len(names) == 1 else 'them'}: give one with "
        f"{broker_hint(source)}"
    )


def _local_consumers(
    bus: EventBus, channel: Channel, produced_here: Callable[[str], bool]
) -> dict[str, tuple[tuple[str, ...], tuple[Subscription, ...]]]:
    """The local reactions to events of `channel` produced by another deployable, by consumer
    name: the event types each reads (a renamed event's former types too) and its handlers."""
    found: dict[str, tuple[tuple[str, ...], tuple[Subscription, ...]]] = {}
    for event_type in channel.events:
        if produced_here(event_type):
            continue
        cls = bus.event_class(event_type)
        if cls is None:
            continue
        for sub in bus.handlers_for(cls):
            types, subs = found.get(sub.name, ((), ()))
            wanted = (event_type, *cls.former_event_types)
            found[sub.name] = (
                tuple(dict.fromkeys((*types, *wanted))),
                subs if sub in subs else (*subs, sub),
            )
    return found
