"""The transport conformance suite's fixtures: one `Backend` a transport kind (the in-memory
broker, NATS JetStream, Redis Streams), each test on a clean broker state.

The NATS and Redis servers are the session's throwaway ones (tests/brokers.py); a clean state is
no stream on the server (NATS) or an empty database (Redis)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping

import nats
import pytest
import redis.asyncio as aioredis

from loom.model import messaging as wire
from loom.runtime.transports import (
    MemoryBroker,
    MemoryTransport,
    NatsTransport,
    RedisTransport,
    Transport,
    TransportError,
)
from tests.brokers import NatsServer, RedisServer
from tests.waiting import until

ACK_WAIT = 0.35
REQUEST_TIMEOUT = 1.0


class Backend:
    """Transports of one kind on one broker, and what a test does to the broker itself."""

    kind = ""

    def __init__(self) -> None:
        self._open: list[Transport] = []

    def new(self) -> Transport:
        raise NotImplementedError

    async def transport(self) -> Transport:
        """A connected transport (closed at the end of the test)."""
        transport = self.new()
        await transport.connect()
        self._open.append(transport)
        return transport

    async def inject(self, channel: str, event_type: str, headers: Mapping[str, str]) -> None:
        """Put bytes on the channel as some other client than a Loom relay would."""
        raise NotImplementedError

    # does a crash of the server keep every delivery and ack made just before it?
    crash_keeps_consumer_state = True

    def stop(self) -> None:
        raise NotImplementedError

    def crash(self) -> None:
        """Kill the server (SIGKILL), keeping its storage; `start()` brings it back."""
        self.stop()

    def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        for transport in self._open:
            with contextlib.suppress(TransportError):
                await transport.close()


class MemoryBackend(Backend):
    kind = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.broker = MemoryBroker()

    def new(self) -> Transport:
        return MemoryTransport(self.broker, ack_wait=ACK_WAIT, dedup_window=60)

    async def inject(self, channel: str, event_type: str, headers: Mapping[str, str]) -> None:
        self.broker.inject(channel, headers, b"not a Loom message")

    def stop(self) -> None:
        self.broker.down = True

    def start(self) -> None:
        self.broker.down = False


class NatsBackend(Backend):
    kind = "nats"

    def __init__(self, server: NatsServer) -> None:
        super().__init__()
        self.server = server

    def new(self) -> Transport:
        return NatsTransport(
            self.server.url, ack_wait=ACK_WAIT, dedup_window=60, request_timeout=REQUEST_TIMEOUT
        )

    async def inject(self, channel: str, event_type: str, headers: Mapping[str, str]) -> None:
        nc = await nats.connect(self.server.url)
        try:
            subject = wire.event_subject(channel, event_type)
            await nc.jetstream().publish(subject, b"not a Loom message", headers=dict(headers))
        finally:
            await nc.close()

    async def clean(self) -> None:
        nc = await nats.connect(self.server.url)
        try:
            js = nc.jetstream()
            for info in await js.streams_info():
                await js.delete_stream(info.config.name or "")
        finally:
            await nc.close()

    def stop(self) -> None:
        # a shutdown, not a crash: JetStream writes a consumer's state (deliveries, acks) to its
        # files a moment after it changes, so a SIGKILL can forget the last ones (docs/brokers.md)
        self.server.stop_keeping_storage(kill=False)

    crash_keeps_consumer_state = False

    def crash(self) -> None:
        self.server.stop_keeping_storage(kill=True)

    def start(self) -> None:
        self.server.start()


class RedisBackend(Backend):
    kind = "redis"

    def __init__(self, server: RedisServer) -> None:
        super().__init__()
        self.server = server

    def new(self) -> Transport:
        return RedisTransport(
            self.server.url, ack_wait=ACK_WAIT, dedup_window=60, request_timeout=REQUEST_TIMEOUT
        )

    async def inject(self, channel: str, event_type: str, headers: Mapping[str, str]) -> None:
        client = aioredis.Redis.from_url(self.server.url)
        try:
            fields = dict(headers) or {"something": "else"}
            await client.xadd(wire.redis_stream_key(channel), fields)  # type: ignore[arg-type]
        finally:
            await client.aclose()

    async def clean(self) -> None:
        client = aioredis.Redis.from_url(self.server.url)
        try:
            await client.flushall()
        finally:
            await client.aclose()

    def stop(self) -> None:
        self.server.stop_keeping_storage(kill=True)  # a crash: the fsynced AOF keeps everything

    def start(self) -> None:
        self.server.start()


KINDS = ["memory", "nats", "redis"]


async def clean_backend(request: pytest.FixtureRequest) -> Backend:
    """The backend `request.param` names, on a clean broker (the servers are the session's)."""
    made: Backend
    if request.param == "memory":
        made = MemoryBackend()
    elif request.param == "nats":
        made = NatsBackend(request.getfixturevalue("nats_server"))
        await made.clean()
    else:
        made = RedisBackend(request.getfixturevalue("redis_server"))
        await made.clean()
    return made


@pytest.fixture(params=KINDS)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    made = await clean_backend(request)
    yield made
    await made.close()


@pytest.fixture
async def nats_transport(nats_server: NatsServer) -> AsyncIterator[NatsTransport]:
    """A NATS transport connected to the session's server, on a clean broker."""
    made = NatsBackend(nats_server)
    await made.clean()
    transport = await made.transport()
    assert isinstance(transport, NatsTransport)
    yield transport
    await made.close()


async def eventually(attempt: Callable[[], object], *, within: float, what: str) -> float:
    """Call the coroutine function `attempt` until it stops raising TransportError; the seconds
    it took."""
    start = time.monotonic()

    async def succeeds() -> bool:
        try:
            await attempt()  # type: ignore[misc]
        except TransportError:
            return False
        return True

    await until(succeeds, timeout=within, what=f"{what}: still failing", interval=0.1)
    return time.monotonic() - start
