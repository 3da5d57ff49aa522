"""The two deployables of bench/broker.py, each served by its own uvicorn subprocess
(`uvicorn --factory bench._broker_apps:sender_app`, as bench/_serving.py starts every server).

Both are the generated service of bench/broker.loom built by `create_app` exactly as the broker
topology tests build theirs (tests/runtime/broker/conftest.py: `contexts`, the channel's broker
consumers, one `NatsTransport` per deployable), with the runtime's default relay, consumer and
transport options. Two timing hooks, the only difference from a plain deployable, each one UDP
datagram to the bench (`BENCH_UDP_PORT`; a send on loopback takes a few microseconds and never
blocks): the sender notes `c <n> <time>` right after the commit of the unit of work that wrote a
`Pinged` to the outbox, `p` when its relay starts publishing it and `a` when JetStream acked the
publish; the receiver `f` when its consumer's fetch returned it, `s` when its reaction starts and
`d` when the reaction returns (its transaction, with the inbox row, committed). The times are `time.monotonic()`,
CLOCK_MONOTONIC, one clock for every process of the machine.

Configuration (environment): BENCH_DATABASE_URL, BENCH_NATS_URL, BENCH_UDP_PORT.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from fastapi import FastAPI

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from loom.runtime import DomainEvent, Service, create_app
from loom.runtime._work import Work
from loom.runtime.transports import ConsumerSpec, Message, NatsTransport
from loom.testing import build_service
from tests.runtime.broker.conftest import broker_channels, routers

MODEL = ROOT / "bench" / "broker.loom"
SENDER, RECEIVER = ("Sender",), ("Receiver",)

_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def _note(kind: str, n: int, at: float) -> None:
    _sock.sendto(f"{kind} {n} {at!r}".encode(), ("127.0.0.1", int(os.environ["BENCH_UDP_PORT"])))


def _app(main: ModuleType, contexts: tuple[str, ...], subscribe: Callable[[Service], None]) -> Any:
    return create_app(
        title=", ".join(contexts),
        metadata=main.metadata,
        routers=routers(main, contexts),
        database_url=os.environ["BENCH_DATABASE_URL"],
        model_revision=main.MODEL_REVISION,
        channels=broker_channels(main, [SENDER, RECEIVER]),
        event_types=main.EVENT_TYPES,
        subscribe=subscribe,
        contexts=contexts,
        brokers={"": NatsTransport(os.environ["BENCH_NATS_URL"])},
    )


def sender_app() -> FastAPI:
    """Sender: `POST /api/workflows/ping` commits a Ping and its `Pinged` (outbox row); the relay
    publishes it to NATS."""
    main = build_service([MODEL])
    pinged = main.sender_domain.Pinged
    commit = Work._commit

    async def timed_commit(self: Work) -> None:
        events: list[DomainEvent] = [*self._pending, *self._emitted]
        await commit(self)
        at = time.monotonic()
        for event in events:
            if isinstance(event, pinged):
                _note("c", event.n, at)

    Work._commit = timed_commit  # type: ignore[method-assign]
    publish = NatsTransport.publish

    async def timed_publish(self: NatsTransport, message: Message) -> None:
        n = json.loads(message.payload)["n"]
        _note("p", n, time.monotonic())
        await publish(self, message)
        _note("a", n, time.monotonic())

    NatsTransport.publish = timed_publish  # type: ignore[method-assign]
    return _app(main, SENDER, lambda service: None)  # type: ignore[no-any-return]


def receiver_app() -> FastAPI:
    """Receiver: its durable NATS consumer runs `Receiver.onPinged`, which saves a Pong."""
    main = build_service([MODEL])
    pinged = main.sender_domain.Pinged

    def timed(handler: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        async def reaction(event: Any) -> None:
            _note("s", event.n, time.monotonic())
            await handler(event)
            _note("d", event.n, time.monotonic())

        return reaction

    fetch = NatsTransport.fetch

    async def timed_fetch(self: NatsTransport, consumer: ConsumerSpec, **options: Any) -> Any:
        got = await fetch(self, consumer, **options)
        at = time.monotonic()
        for received in got:
            _note("f", json.loads(received.message.payload)["n"], at)
        return got

    NatsTransport.fetch = timed_fetch  # type: ignore[method-assign]

    def subscribe(service: Service) -> None:
        main.receiver_reactions.subscribe(service)
        bus = service.events
        for sub in list(bus.handlers_for(pinged)):
            bus.unsubscribe(pinged, sub.handler)
            bus.subscribe(pinged, timed(sub.handler), name=sub.name)

    return _app(main, RECEIVER, subscribe)  # type: ignore[no-any-return]
