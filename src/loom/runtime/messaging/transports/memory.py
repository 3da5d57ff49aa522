"""The in-memory transport: a broker inside one Python process, for tests that run several
deployables side by side without a server. It keeps the whole transport contract of
`messaging/transports/base.py` (durable consumers created up front, deduplicated publishes, redelivery after
`ack_wait` or `retry`, publish order per consumer, `work` streams dropping what every consumer
acked), and nothing survives the process.

Share one `MemoryBroker` between the transports of the deployables that talk to each other."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loom.model import messaging as wire
from loom.runtime.messaging.transports.base import (
    ConsumerSpec,
    MalformedMessage,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)


@dataclass(slots=True)
class _Pending:
    """A message out with a fetcher, or waiting for its retry."""

    delivered: int
    due: float  # monotonic: when it may be handed out again


@dataclass(slots=True)
class _Consumer:
    event_types: frozenset[str]
    cursor: int = 0  # the next sequence never handed out
    pending: dict[int, _Pending] = field(default_factory=dict)
    acked: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Stream:
    spec: StreamSpec
    messages: dict[int, Message | MalformedMessage] = field(default_factory=dict)
    next_seq: int = 1
    consumers: dict[str, _Consumer] = field(default_factory=dict)


class MemoryBroker:
    """The broker's state: streams, consumers, the dedup memory. `down` makes every call of every
    transport on it fail as if the server were unreachable (a broker outage in a test)."""

    def __init__(self) -> None:
        self.streams: dict[str, _Stream] = {}
        self.seen: dict[str, float] = {}  # event id -> when first published (monotonic)
        self.down = False
        self.changed = asyncio.Condition()

    def check_up(self) -> None:
        if self.down:
            raise TransportError("the in-memory broker is down")

    def stream(self, channel: str) -> _Stream:
        found = self.streams.get(channel)
        if found is None:
            raise TransportError(f"no stream for channel {channel}: ensure it first")
        return found

    def inject(self, channel: str, headers: Mapping[str, str], payload: bytes) -> None:
        """Store raw bytes as a broker would hold a message some other client wrote (a test of
        hostile input: no relay of ours publishes anything but a `Message`)."""
        stream = self.stream(channel)
        stream.messages[stream.next_seq] = Message.decode(channel, headers, payload)
        stream.next_seq += 1


class _MemoryReceived(Received):
    def __init__(
        self, transport: MemoryTransport, stream: _Stream, consumer: _Consumer, seq: int
    ) -> None:
        self.decoded = stream.messages[seq]
        self.delivered = consumer.pending[seq].delivered
        self._transport = transport
        self._stream = stream
        self._consumer = consumer
        self._seq = seq

    async def ack(self) -> None:
        self._transport.broker.check_up()
        if self._consumer.pending.pop(self._seq, None) is not None:
            self._consumer.acked.add(self._seq)
            self._transport.drop_consumed(self._stream, self._seq)

    async def retry(self, delay: float) -> None:
        self._transport.broker.check_up()
        held = self._consumer.pending.get(self._seq)
        if held is not None:
            held.due = time.monotonic() + max(delay, 0.0)
        await self._transport.notify()

    async def in_progress(self) -> None:
        self._transport.broker.check_up()
        held = self._consumer.pending.get(self._seq)
        if held is not None:
            held.due = time.monotonic() + self._transport.ack_wait


class MemoryTransport(Transport):
    kind = "memory"

    def __init__(
        self, broker: MemoryBroker, *, ack_wait: float = 30.0, dedup_window: float = 300.0
    ) -> None:
        super().__init__(ack_wait=ack_wait, dedup_window=dedup_window)
        self.broker = broker

    async def connect(self) -> None:
        self.broker.check_up()

    async def close(self) -> None:
        return None

    async def check(self) -> None:
        self.broker.check_up()

    async def pending(self, spec: ConsumerSpec) -> int:
        self.broker.check_up()
        stream = self.broker.stream(spec.channel)
        consumer = stream.consumers.get(spec.name)
        if consumer is None:
            return 0
        unread = 0
        for seq in range(consumer.cursor, stream.next_seq):
            message = stream.messages.get(seq)
            kind = _type_of(message)
            if message is not None and (kind is None or kind in consumer.event_types):
                unread += 1  # a message it will be handed (one naming no type too)
        return unread + len(consumer.pending)

    async def ensure(self, stream: StreamSpec) -> None:
        self.broker.check_up()
        held = self.broker.streams.setdefault(stream.channel, _Stream(stream))
        for spec in stream.consumers:
            # a consumer created later starts at the oldest message the stream still keeps
            first = min(held.messages, default=held.next_seq)
            consumer = held.consumers.setdefault(spec.name, _Consumer(frozenset(), first))
            consumer.event_types = frozenset(spec.event_types)

    async def publish(self, message: Message) -> None:
        broker = self.broker
        broker.check_up()
        now = time.monotonic()
        for event_id, at in list(broker.seen.items()):
            if now - at > self.dedup_window:
                del broker.seen[event_id]
        if message.event_id in broker.seen:
            return
        stream = broker.stream(message.channel)
        broker.seen[message.event_id] = now
        stream.messages[stream.next_seq] = message
        stream.next_seq += 1
        await self.notify()

    async def publish_many(self, messages: Sequence[Message]) -> list[TransportError | None]:
        """Each message on its own, as a pipelining broker takes them: one refused (its stream
        not ensured) fails alone."""
        return await self._publish_each(messages, stop_at_failure=False)

    async def fetch(
        self, consumer: ConsumerSpec, *, batch: int = 64, timeout: float = 1.0
    ) -> list[Received]:
        deadline = time.monotonic() + timeout
        while True:
            self.broker.check_up()
            found = self._take(consumer, batch)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            # a retry falling due wakes nobody: poll at least every 50 ms
            async with self.broker.changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.broker.changed.wait(), min(left, 0.05))

    def _take(self, spec: ConsumerSpec, batch: int) -> list[Received]:
        stream = self.broker.stream(spec.channel)
        consumer = stream.consumers.get(spec.name)
        if consumer is None:
            raise TransportError(f"no consumer {spec.name} on {spec.channel}: ensure it first")
        now = time.monotonic()
        out: list[Received] = []
        for seq in sorted(consumer.pending):
            held = consumer.pending[seq]
            if held.due <= now and len(out) < batch:
                held.delivered += 1
                held.due = now + self.ack_wait
                out.append(_MemoryReceived(self, stream, consumer, seq))
        while len(out) < batch and consumer.cursor < stream.next_seq:
            seq = consumer.cursor
            consumer.cursor += 1
            message = stream.messages.get(seq)
            if message is None:
                continue
            event_type = _type_of(message)
            if event_type is not None and event_type not in consumer.event_types:
                consumer.acked.add(seq)  # not this consumer's: as good as done
                self.drop_consumed(stream, seq)
                continue
            consumer.pending[seq] = _Pending(1, now + self.ack_wait)
            out.append(_MemoryReceived(self, stream, consumer, seq))
        return out

    def drop_consumed(self, stream: _Stream, seq: int) -> None:
        """A `work` stream forgets a message once every consumer acked it."""
        if stream.spec.retention == "work" and all(
            seq in c.acked for c in stream.consumers.values()
        ):
            stream.messages.pop(seq, None)
            for c in stream.consumers.values():
                c.acked.discard(seq)

    async def notify(self) -> None:
        async with self.broker.changed:
            self.broker.changed.notify_all()


def _type_of(message: Message | MalformedMessage | None) -> str | None:
    """The event type a stored message names (None: none, or no message)."""
    if isinstance(message, MalformedMessage):
        return message.headers.get(wire.HEADER_EVENT_TYPE)
    return None if message is None else message.event_type
