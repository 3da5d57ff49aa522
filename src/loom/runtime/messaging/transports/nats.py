"""The NATS JetStream transport (docs/brokers.md "NATS JetStream").

A channel is a stream (`stream_name`) on the subjects `channel_address(channel) + ".>"`, one event
type to a subject (`event_subject`); file storage; `work` retention is JetStream's interest
retention (a message goes once every consumer whose filter matches it acked it), `log` is limits
retention (kept). Every consumer is a durable pull consumer (`jetstream_durable`) filtering on its
event types' subjects, explicit ack, `ack_wait`, deliver all, unlimited deliveries (the runtime
decides when a message is dead). A publish carries the event id as `Nats-Msg-Id`, which JetStream
deduplicates within the stream's duplicate window (`dedup_window`). A batch of publishes is
pipelined (`publish_async`, every ack awaited after the last is sent): the server stores one
connection's messages in the order they were sent.

The client reconnects by itself after a server restart (pull subscriptions included); while it is
disconnected every call raises `TransportError` at once rather than buffer, so a publish during an
outage never waits past `request_timeout`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    PubAck,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from loom.model import messaging as wire
from loom.runtime.messaging.transports.base import (
    ConsumerSpec,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)

T = TypeVar("T")
log = logging.getLogger("loom.transport.nats")

_RETENTION = {"work": RetentionPolicy.INTEREST, "log": RetentionPolicy.LIMITS}
_STREAM_IN_USE = 10058  # JetStream's err_code: a stream of that name exists already
# what a failing nats-py call raises: its own errors, a timed-out request, a dropped socket
_FAILURES = (nats.errors.Error, asyncio.TimeoutError, OSError)


def _delivered(msg: Msg) -> int:
    """`msg.metadata.num_delivered`, read from the ack subject of the common form
    (`$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>`)
    without building the rest of the metadata (two sequence pairs and a time, for one number);
    any other form is nats-py's to read."""
    tokens = (msg.reply or "").split(".")
    if len(tokens) == 9 and tokens[0] == "$JS" and tokens[1] == "ACK":
        return int(tokens[4])
    return msg.metadata.num_delivered


class _Client(Client):
    """nats-py's client, reading message headers with fewer steps: its `_parse_header_lines`
    tests each header name for whitespace a character at a time in a generator, about 1,500
    bytecodes for the nine headers of a Loom message: 9 % of a broker consumer's Python per
    event. This reads them to the very same dict (tests/runtime/transports/test_nats_headers.py
    compares the two on generated input)."""

    @staticmethod
    def _parse_header_lines(raw: bytes) -> dict[str, str]:
        out: dict[str, str] = {}
        for line in raw.split(b"\r\n"):
            name, sep, value = line.partition(b":")
            if not sep:  # an empty line too
                continue
            try:
                key = name.strip().decode("ascii")
            except UnicodeDecodeError:  # skipped, as nats-py skips it
                continue
            # whitespace inside a name: skipped, as nats-py does (`split` breaks a name exactly
            # where `str.isspace` finds a character, so a name without one comes back whole)
            if key and key.split() != [key]:
                continue
            out[key] = value.strip().decode("utf-8", "replace")
        return out


class _NatsReceived(Received):
    def __init__(self, transport: NatsTransport, channel: str, msg: Msg) -> None:
        self.decoded = Message.decode(channel, msg.headers or {}, msg.data)
        self.delivered = _delivered(msg)
        self._transport = transport
        self._msg = msg

    async def ack(self) -> None:
        # a request, not a plain publish: returns once the server recorded the ack
        await self._transport.call(lambda: self._msg.ack_sync(self._transport.request_timeout))

    async def ack_nowait(self) -> None:
        # a plain publish on the connection: the client's flusher writes it (and `close` flushes
        # what is left); no reply to wait for, nor for the server to send
        await self._transport.call(self._msg.ack)

    async def retry(self, delay: float) -> None:
        await self._transport.call(lambda: self._msg.nak(delay=max(delay, 0.0)))
        await self._transport.flush()

    async def in_progress(self) -> None:
        await self._transport.call(self._msg.in_progress)
        await self._transport.flush()


class NatsTransport(Transport):
    """`url`: `nats://host:port` (several, comma-separated, for a cluster). `request_timeout` (s)
    bounds every request to the server (publish, ack, stream and consumer management);
    `reconnect_wait` (s) is the pause between reconnection attempts."""

    kind = "nats"

    def __init__(
        self,
        url: str,
        *,
        ack_wait: float = 30.0,
        dedup_window: float = 300.0,
        request_timeout: float = 5.0,
        reconnect_wait: float = 0.25,
    ) -> None:
        super().__init__(ack_wait=ack_wait, dedup_window=dedup_window)
        if request_timeout <= 0 or reconnect_wait <= 0:
            raise ValueError("request_timeout and reconnect_wait must be positive")
        self.url = url
        self.request_timeout = request_timeout
        self.reconnect_wait = reconnect_wait
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._subs: dict[str, JetStreamContext.PullSubscription] = {}
        self._idle: set[str] = set()  # consumers whose last fetch found nothing (`fetch`)

    async def connect(self) -> None:
        nc = _Client()

        async def quiet(error: Exception) -> None:  # reconnects are expected: no error log
            log.debug("nats: %s", error)

        try:
            # with unlimited reconnects nats-py retries the first connect forever: bound it
            await asyncio.wait_for(
                nc.connect(
                    servers=self.url.split(","),
                    name="loom",
                    connect_timeout=max(1, round(self.request_timeout)),
                    allow_reconnect=True,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=self.reconnect_wait,  # type: ignore[arg-type]
                    error_cb=quiet,
                ),
                self.request_timeout,
            )
        except _FAILURES as exc:
            await nc.close()
            raise TransportError(f"cannot connect to NATS at {self.url}: {exc!r}") from exc
        self._nc = nc
        self._js = nc.jetstream(timeout=self.request_timeout)

    async def close(self) -> None:
        nc, self._nc, self._js = self._nc, None, None
        self._subs.clear()
        self._idle.clear()
        if nc is not None:
            await nc.close()

    async def check(self) -> None:
        self._client()

    def _client(self) -> tuple[Client, JetStreamContext]:
        if self._nc is None or self._js is None:
            raise TransportError("the NATS transport is not connected: call connect() first")
        if not self._nc.is_connected:
            raise TransportError(f"NATS at {self.url} is unreachable (reconnecting)")
        return self._nc, self._js

    async def call(self, request: Callable[[], Awaitable[T]]) -> T:
        """Run one request on the connection, its failure a `TransportError`."""
        self._client()
        try:
            return await request()
        except _FAILURES as exc:
            raise TransportError(f"NATS request failed: {exc!r}") from exc

    async def flush(self) -> None:
        nc, _ = self._client()
        try:
            await nc.flush(self.request_timeout)  # type: ignore[arg-type]
        except _FAILURES as exc:
            raise TransportError(f"NATS flush failed: {exc!r}") from exc

    async def pending(self, spec: ConsumerSpec) -> int:
        _, js = self._client()
        stream, durable = wire.stream_name(spec.channel), wire.jetstream_durable(spec.name)
        try:
            found = await js.consumer_info(stream, durable)
        except nats.js.errors.NotFoundError:
            return 0
        except _FAILURES as exc:
            raise TransportError(f"cannot read consumer {spec.name}: {exc!r}") from exc
        # not delivered yet (of its event types: it filters by subject), and delivered unacked
        return int(found.num_pending or 0) + int(found.num_ack_pending or 0)

    async def ensure(self, stream: StreamSpec) -> None:
        _, js = self._client()
        name = wire.stream_name(stream.channel)
        config = StreamConfig(
            name=name,
            subjects=[wire.channel_address(stream.channel) + ".>"],
            retention=_RETENTION[stream.retention],
            storage=StorageType.FILE,
            duplicate_window=self.dedup_window,
        )
        try:
            try:
                await js.add_stream(config)
            except nats.js.errors.BadRequestError as exc:
                if exc.err_code != _STREAM_IN_USE:
                    raise
                await js.update_stream(config)
            for spec in stream.consumers:
                await self._ensure_consumer(js, name, spec)
        except _FAILURES as exc:
            raise TransportError(f"cannot ensure the stream of {stream.channel}: {exc!r}") from exc

    async def _ensure_consumer(self, js: JetStreamContext, stream: str, spec: ConsumerSpec) -> None:
        durable = wire.jetstream_durable(spec.name)
        subjects = sorted({wire.event_subject(spec.channel, t) for t in spec.event_types})
        try:
            found = await js.consumer_info(stream, durable)
        except nats.js.errors.NotFoundError:
            found = None
        if found is not None:
            have = found.config
            same_filter = sorted(have.filter_subjects or [have.filter_subject or ""]) == subjects
            if same_filter and have.ack_wait == self.ack_wait:
                return  # as it is: creating it again would be refused by older servers
        await js.add_consumer(
            stream,
            ConsumerConfig(
                name=durable,
                durable_name=durable,
                description=spec.name,
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=self.ack_wait,
                max_deliver=-1,
                filter_subjects=subjects,
            ),
        )

    async def publish(self, message: Message) -> None:
        [failed] = await self.publish_many([message])
        if failed is not None:
            raise failed

    async def publish_many(self, messages: Sequence[Message]) -> list[TransportError | None]:
        """Every message sent with `publish_async` (one connection: JetStream stores them in
        this order), then every ack awaited together, for `request_timeout` at most."""
        try:
            _, js = self._client()
        except TransportError as exc:
            return [exc] * len(messages)
        sent: list[asyncio.Future[PubAck]] = []
        unsent: TransportError | None = None
        for message in messages:
            subject = wire.event_subject(message.channel, message.event_type)
            try:
                sent.append(
                    await js.publish_async(
                        subject,
                        message.payload.encode(),
                        stream=wire.stream_name(message.channel),
                        headers={"Nats-Msg-Id": message.event_id, **message.headers()},
                    )
                )
            except _FAILURES as exc:
                unsent = TransportError(f"publish to {subject} failed: {exc!r}")
                break
        if sent:
            _, late = await asyncio.wait(sent, timeout=self.request_timeout)
            for future in late:
                future.cancel()  # nats-py forgets it (and frees its slot)
        out: list[TransportError | None] = []
        for message, future in zip(messages, sent, strict=False):
            subject = wire.event_subject(message.channel, message.event_type)
            if future.cancelled():
                out.append(TransportError(f"publish to {subject}: no ack in time"))
            elif (error := future.exception()) is not None:
                out.append(TransportError(f"publish to {subject} failed: {error!r}"))
            else:
                out.append(None)
        return out + [unsent] * (len(messages) - len(sent))

    async def fetch(
        self, consumer: ConsumerSpec, *, batch: int = 64, timeout: float = 1.0
    ) -> list[Received]:
        """After a fetch that found nothing, this one asks for a single message. nats-py's batch
        fetch can take the server's late answer to the fetch before it (its request expired just
        after the client stopped waiting) for its own, and then leaves a pull request of a whole
        batch lingering on the server: the next message goes to that request, and the fetch that
        gets it waits for the rest of the batch until the request expires (up to `timeout`
        seconds, for a message to an idle consumer). A request for one message ends with it."""
        _, js = self._client()
        name = consumer.name
        sub = self._subs.get(name)
        try:
            if sub is None:
                sub = await js.pull_subscribe_bind(
                    durable=wire.jetstream_durable(name),
                    stream=wire.stream_name(consumer.channel),
                )
                self._subs[name] = sub
            wanted = 1 if name in self._idle else batch
            msgs = await sub.fetch(wanted, timeout=max(timeout, 0.01))
        except TimeoutError:  # nats-py's own and asyncio's: nothing came in time
            self._idle.add(name)
            return []
        except _FAILURES as exc:
            raise TransportError(f"fetch for {name} failed: {exc!r}") from exc
        if msgs:
            self._idle.discard(name)
        else:
            self._idle.add(name)
        return [_NatsReceived(self, consumer.channel, msg) for msg in msgs]
