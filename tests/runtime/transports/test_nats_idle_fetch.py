"""A fetch after one that found nothing asks NATS for a single message (`NatsTransport.fetch`):
a batch request left lingering by nats-py would hold the next message until it expired.

Seen on the wire: a second connection subscribes to the consumer's pull-request subject, which
the server's JetStream API answers, and reads the batch each request of the transport asks for."""

from __future__ import annotations

import json
from collections.abc import Awaitable

import nats
import pytest
from nats.aio.msg import Msg

from loom.model import messaging as wire
from loom.runtime.transports import NatsTransport, Received, StreamSpec
from tests.brokers import NatsServer
from tests.runtime.transports.test_conformance import CHANNEL, RESERVE, message
from tests.waiting import until


@pytest.fixture
async def transport(nats_transport: NatsTransport) -> NatsTransport:
    await nats_transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    return nats_transport


async def test_a_fetch_after_one_that_found_nothing_asks_for_one_message(
    nats_server: NatsServer, transport: NatsTransport
) -> None:
    spy = await nats.connect(nats_server.url)
    asked: list[int] = []  # the batch of every pull request, in order
    stream, durable = wire.stream_name(CHANNEL), wire.jetstream_durable(RESERVE.name)

    async def seen(msg: Msg) -> None:
        asked.append(json.loads(msg.data)["batch"])

    await spy.subscribe(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}", cb=seen)
    await spy.flush()

    async def first_request_of(fetch: Awaitable[object]) -> int:
        """The batch the first pull request of a fetch asked for (a fetch can make two)."""
        before = len(asked)
        await fetch
        await until(lambda: len(asked) > before, timeout=10, what="the fetch's pull request")
        return asked[before]

    try:
        # a consumer's first fetch, with nothing there, asks for its batch
        assert await first_request_of(transport.fetch(RESERVE, batch=64, timeout=0.2)) == 64
        # it found nothing: the next asks for one message, and gets it as soon as it is there
        await transport.publish(message(1))
        got: list[Received] = []

        async def fetch_one() -> None:
            got.extend(await transport.fetch(RESERVE, batch=64, timeout=5))

        assert await first_request_of(fetch_one()) == 1
        assert [r.message.event_id for r in got] == ["evt-1"]
        # that one found a message: the next asks for the batch again
        for n in (2, 3):
            await transport.publish(message(n))
        got.clear()
        assert await first_request_of(fetch_one()) == 64
        assert [r.message.event_id for r in got] == ["evt-2", "evt-3"]
    finally:
        await spy.close()
