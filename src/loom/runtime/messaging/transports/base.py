"""Transports: how a durable event leaves a deployable's outbox for a broker, and how it reaches the
reactions of the deployables that consume it.

The contract every adapter keeps (checked by one conformance suite, tests/runtime/transports, run
against each: the in-memory one below, NATS JetStream, Redis Streams):

- `publish` returns only once the broker holds the message durably; publishing an `event_id` the
  broker saw within its deduplication window stores nothing new (the relay may publish again after
  a crash between publish and mark); `publish_many` stores a batch in its order, pipelined, and
  says which messages the broker acked;
- every consumer named in a channel's `StreamSpec` is durable and exists from `ensure` on, so a
  message published before its consumer's deployable first starts still reaches it;
- `fetch` hands each message to one fetcher of a consumer (replicas share a consumer) and gives it
  again, with `delivered` one higher, when it is not acked within `ack_wait` seconds (the fetcher
  died) or after `retry(delay)`;
- messages of one consumer are fetched in publish order, redeliveries before new ones;
- a `log` channel keeps its messages after every consumer acked them, a `work` channel may drop
  them then.

The transport moves bytes: decoding, the inbox, retries and dead letters are the consumer's
(`messaging/consumer.py`), publishing from the outbox is the relay's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loom.model import messaging as wire
from loom.runtime.messaging.channels import (
    ConsumerSpec as ConsumerSpec,  # the transports speak of it too
)
from loom.runtime.messaging.channels import Retention
from loom.runtime.values.trace_context import join_stored, split_stored


# Not frozen, though nothing assigns to one after it is made: a frozen dataclass's __init__ sets
# each field through `object.__setattr__`, and with the envelope and delivery (`messaging/
# events.py`) that was 1.3 % of a broker consumer's instructions an event (docs/benchmarks.md).
@dataclass(slots=True)
class Message:
    """One durable event on the wire: its payload (the event's fields as the outbox stores them,
    JSON text) and the metadata travelling beside it. `key` orders: messages of one key reach a
    consumer in publish order."""

    event_id: str
    event_type: str
    channel: str
    payload: str
    key: str = ""
    correlation_id: str = ""
    causation_id: str | None = None
    occurred_at: str = ""  # ISO 8601, as the outbox row has it
    model_revision: str | None = None
    tenant: str | None = None  # a tenanted context's event: the tenant it was raised in
    # `Loom-Key-Counts` as the outbox row holds it (None: a row from before it, or a producer
    # that sends none): what ordering across consumer replicas checks (`messaging/ordering.py`)
    key_counts: str | None = None
    # the W3C trace context of the relay's `send` span (`values/tracing.py`'s stored form),
    # sent as `traceparent` / `tracestate` beside the `Loom-*` headers; None: not traced
    trace_context: str | None = None

    def headers(self) -> dict[str, str]:
        """The metadata as the `Loom-*` headers (absent values left out)."""
        out = {
            wire.HEADER_EVENT_ID: self.event_id,
            wire.HEADER_EVENT_TYPE: self.event_type,
            wire.HEADER_KEY: self.key,
            wire.HEADER_CORRELATION_ID: self.correlation_id,
            wire.HEADER_OCCURRED_AT: self.occurred_at,
        }
        if self.causation_id is not None:
            out[wire.HEADER_CAUSATION_ID] = self.causation_id
        if self.model_revision is not None:
            out[wire.HEADER_MODEL_REVISION] = self.model_revision
        if self.tenant is not None:
            out[wire.HEADER_TENANT] = self.tenant
        if self.key_counts is not None:
            out[wire.HEADER_KEY_COUNTS] = self.key_counts
        if self.trace_context is not None:
            out.update(split_stored(self.trace_context))
        return out

    @classmethod
    def from_headers(cls, channel: str, headers: Mapping[str, str], payload: str) -> Message:
        """The message a broker handed back; a header missing where one is required raises
        `MalformedMessage` (the consumer dead-letters it rather than loop on it)."""
        try:
            event_id = headers[wire.HEADER_EVENT_ID]
            event_type = headers[wire.HEADER_EVENT_TYPE]
        except KeyError as missing:
            reason = f"the message has no {missing.args[0]} header"
            raise MalformedMessage(reason, headers, payload) from None
        return cls(
            event_id=event_id,
            event_type=event_type,
            channel=channel,
            payload=payload,
            key=headers.get(wire.HEADER_KEY, ""),
            correlation_id=headers.get(wire.HEADER_CORRELATION_ID, ""),
            causation_id=headers.get(wire.HEADER_CAUSATION_ID),
            occurred_at=headers.get(wire.HEADER_OCCURRED_AT, ""),
            model_revision=headers.get(wire.HEADER_MODEL_REVISION),
            tenant=headers.get(wire.HEADER_TENANT) or None,
            key_counts=headers.get(wire.HEADER_KEY_COUNTS) or None,
            trace_context=join_stored(headers),  # it reads only the trace headers
        )

    @classmethod
    def decode(
        cls, channel: str, headers: Mapping[str, str], payload: bytes
    ) -> Message | MalformedMessage:
        """`from_headers` over the bytes a broker holds: the message, or why it is none (a
        payload that is not UTF-8 is malformed too)."""
        try:
            text = payload.decode()
        except UnicodeDecodeError:
            text = payload.decode(errors="replace")
            return MalformedMessage("the payload is not UTF-8 text", headers, text)
        try:
            return cls.from_headers(channel, headers, text)
        except MalformedMessage as malformed:
            return malformed


class MalformedMessage(ValueError):
    """A message on a broker that no Loom relay wrote (its metadata is missing). `headers` and
    `payload` are what the broker held, for the dead letter."""

    def __init__(
        self, reason: str, headers: Mapping[str, str] | None = None, payload: str = ""
    ) -> None:
        super().__init__(reason)
        self.headers = dict(headers or {})
        self.payload = payload


class TransportError(Exception):
    """The broker could not be reached or refused a request; the caller retries with backoff."""


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """A channel as a broker holds it, with every consumer the whole model has for it (created
    up front, so `work` retention never drops a message a consumer has not seen yet)."""

    channel: str
    retention: Retention
    consumers: Sequence[ConsumerSpec] = field(default=())


class Received(ABC):
    """A fetched message, to be settled exactly one way.

    A message on the channel that no Loom relay wrote (no `Loom-*` headers, say) is fetched like
    any other, so that its consumer can dead-letter it instead of seeing it redelivered forever:
    reading its `message` raises `MalformedMessage`, which holds the raw headers and payload;
    `ack` it once dead-lettered."""

    # the message, or why the broker's bytes are none (set by the adapter)
    decoded: Message | MalformedMessage
    # how many times the broker has handed this message out, this time included (1: first)
    delivered: int

    @property
    def message(self) -> Message:
        if isinstance(self.decoded, MalformedMessage):
            raise self.decoded
        return self.decoded

    @abstractmethod
    async def ack(self) -> None:
        """Done: never deliver it to this consumer again (returns once the broker has it)."""

    async def ack_nowait(self) -> None:
        """`ack`, sent without waiting for the broker to confirm it (a consumer sends it after
        its commit). An ack lost so (the connection drops) is a redelivery after `ack_wait`, which
        the inbox skips. This default waits, as `ack` does."""
        await self.ack()

    @abstractmethod
    async def retry(self, delay: float) -> None:
        """Not done: deliver it again after `delay` seconds at the earliest."""

    @abstractmethod
    async def in_progress(self) -> None:
        """Still working on it: restart its `ack_wait`, so it is not handed to another fetcher."""


class Transport(ABC):
    """A connection to one broker (`channelSource`). `ack_wait` (s): how long a fetched message
    stays with its fetcher before the broker hands it out again; `dedup_window` (s): how long a
    published event id is remembered."""

    kind: str = ""

    def __init__(self, *, ack_wait: float = 30.0, dedup_window: float = 300.0) -> None:
        if ack_wait <= 0 or dedup_window <= 0:
            raise ValueError("ack_wait and dedup_window must be positive")
        self.ack_wait = ack_wait
        self.dedup_window = dedup_window

    @abstractmethod
    async def connect(self) -> None:
        """Open the connection (raises `TransportError` when the broker cannot be reached)."""

    @abstractmethod
    async def close(self) -> None:
        """Close the connection; unacked messages go back to the broker (after `ack_wait`)."""

    async def check(self) -> None:
        """Raise `TransportError` when the broker cannot be reached now (`GET /readyz` asks;
        cheap: the client's own connection state, or one round trip)."""
        return None

    @abstractmethod
    async def pending(self, spec: ConsumerSpec) -> int:
        """How many messages the durable consumer `spec` has not acked yet, fetched or not: its
        lag on the broker (`GET /metrics` reads it, so a consumer that is down shows)."""

    @abstractmethod
    async def ensure(self, stream: StreamSpec) -> None:
        """Create the channel's stream and its consumers, or leave them as they are; an existing
        consumer whose spec names other event types takes them from its current position on
        (keeping what it acked)."""

    @abstractmethod
    async def publish(self, message: Message) -> None:
        """Store `message` durably (deduplicated on `event_id`); returns after the broker's ack."""

    async def publish_many(self, messages: Sequence[Message]) -> list[TransportError | None]:
        """Store each of `messages` as `publish` does, in their order; an adapter pipelines them
        (every one sent before any ack is awaited, on one connection, so the broker stores them in
        this order). Answers, for each, None once the broker acked it, or why it may not hold it:
        publish it again later (a message after a failed one may be failed unsent, with the same
        error). This default publishes one after the other and stops at the first failure."""
        return await self._publish_each(messages, stop_at_failure=True)

    async def _publish_each(
        self, messages: Sequence[Message], *, stop_at_failure: bool
    ) -> list[TransportError | None]:
        """`publish` for each message in turn, answering as `publish_many` does; after a failure
        either the rest fail unsent with its error (`stop_at_failure`) or each is tried alone."""
        out: list[TransportError | None] = []
        for message in messages:
            if stop_at_failure and out and out[-1] is not None:
                out.append(out[-1])
                continue
            try:
                await self.publish(message)
            except TransportError as exc:
                out.append(exc)
            else:
                out.append(None)
        return out

    @abstractmethod
    async def fetch(
        self, consumer: ConsumerSpec, *, batch: int = 64, timeout: float = 1.0
    ) -> list[Received]:
        """Up to `batch` messages for `consumer`, waiting up to `timeout` seconds for the first."""
