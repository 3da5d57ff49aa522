"""Loom's two deployables of bench/broker.py, each served by its own uvicorn subprocess
(`uvicorn --factory bench._broker_apps:sender_app`, as bench/_serving.py starts every server).

Both are the generated service of bench/broker.loom built by `create_app` exactly as the broker
topology tests build theirs (tests/runtime/broker/conftest.py: `contexts`, the channel's broker
consumers, one `NatsTransport` per deployable), with the runtime's default relay, consumer and
transport options, and the connection pool the bench gives both sides (LOOM_POOL_SIZE and
LOOM_POOL_OVERFLOW, what `loom run --pool-size/--pool-overflow` set). The only difference from a
plain deployable are the timing hooks (bench/_broker_points.py): the sender notes `c` right after
the commit of the unit of work that wrote a `Pinged` to the outbox, `w` and `k` when the relay's
claim that took its row began and ended, `p` when the relay starts publishing it (the batch it is
in) and `a` when JetStream acked the batch; the receiver `f` when its consumer's fetch returned
it, `s` when its reaction starts and `d` when the reaction returned (its transaction, with the
inbox row, committed).

Configuration (environment): BENCH_DATABASE_URL, BENCH_NATS_URL, BENCH_UDP_PORT, LOOM_POOL_SIZE,
LOOM_POOL_OVERFLOW, and BENCH_PROFILE (a folder: profile both processes into it).
"""

from __future__ import annotations

import cProfile
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from fastapi import APIRouter, FastAPI

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._broker_points import Points
from loom.runtime import DomainEvent, Service, create_app
from loom.runtime.messaging.relay import Relay
from loom.runtime.storage.work import Work
from loom.runtime.transports import ConsumerSpec, Message, NatsTransport, TransportError
from loom.testing import build_service
from tests.runtime.broker.conftest import broker_channels, routers

MODEL = ROOT / "bench" / "broker.loom"
SENDER, RECEIVER = ("Sender",), ("Receiver",)


def _profiled(role: str) -> list[APIRouter]:
    """With BENCH_PROFILE=<folder>: profile this process (cProfile) from here on, and a route
    `POST /bench/profile` that writes what it measured so far to <folder>/<role>.prof
    (`python -m pstats` reads it). Without: nothing."""
    folder = os.environ.get("BENCH_PROFILE")
    if not folder:
        return []
    profile = cProfile.Profile()
    profile.enable()
    router = APIRouter()

    @router.post("/bench/profile", status_code=204)
    def dump() -> None:
        profile.dump_stats(str(Path(folder) / f"{role}.prof"))

    return [router]


def _app(
    main: ModuleType,
    contexts: tuple[str, ...],
    subscribe: Callable[[Service], None],
    extra: list[APIRouter],
) -> Any:
    return create_app(
        title=", ".join(contexts),
        metadata=main.metadata,
        routers=[*routers(main, contexts), *extra],
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
    extra = _profiled("sender")
    main = build_service([MODEL])
    pinged = main.sender_domain.Pinged
    points = Points(last="a")
    commit = Work._commit

    async def timed_commit(self: Work) -> None:
        events: list[DomainEvent] = [*self._pending, *self._emitted]
        await commit(self)
        at = time.monotonic()
        for event in events:
            if isinstance(event, pinged):
                points.note("c", event.n, at)

    Work._commit = timed_commit  # type: ignore[method-assign]
    publish_many = NatsTransport.publish_many

    async def timed_publish(
        self: NatsTransport, messages: Sequence[Message]
    ) -> list[TransportError | None]:
        numbers = [json.loads(message.payload)["n"] for message in messages]
        began = time.monotonic()
        for n in numbers:
            points.note("p", n, began)
        results = await publish_many(self, messages)
        acked = time.monotonic()  # the relay's batch is acked together
        for n in numbers:
            points.note("a", n, acked)
        return results

    NatsTransport.publish_many = timed_publish  # type: ignore[method-assign]
    claim = Relay._claim

    async def timed_claim(self: Relay) -> tuple[list[Any], datetime]:
        began = time.monotonic()
        rows, until = await claim(self)
        claimed = time.monotonic()
        for row in rows:
            n = json.loads(row.payload)["n"]
            points.note("w", n, began)
            points.note("k", n, claimed)
        return rows, until

    Relay._claim = timed_claim  # type: ignore[method-assign]
    handed_round = Relay._handed_round

    async def timed_handed_round(self: Relay, in_loop: bool) -> int:
        # rows this process committed reach the relay in memory: no claim, so its begin and
        # end are the instant the relay takes them
        began = time.monotonic()
        for row in self._handed[: self.batch_size]:
            n = json.loads(row.payload)["n"]
            points.note("w", n, began)
            points.note("k", n, began)
        return await handed_round(self, in_loop)

    Relay._handed_round = timed_handed_round  # type: ignore[method-assign]
    return _app(main, SENDER, lambda service: None, extra)  # type: ignore[no-any-return]


def receiver_app() -> FastAPI:
    """Receiver: its durable NATS consumer runs `Receiver.onPinged`, which saves a Pong."""
    extra = _profiled("receiver")
    main = build_service([MODEL])
    pinged = main.sender_domain.Pinged
    points = Points(last="d")

    def timed(handler: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        async def reaction(event: Any) -> None:
            points.note("s", event.n, time.monotonic())
            await handler(event)
            points.note("d", event.n, time.monotonic())

        return reaction

    fetch = NatsTransport.fetch

    async def timed_fetch(self: NatsTransport, consumer: ConsumerSpec, **options: Any) -> Any:
        got = await fetch(self, consumer, **options)
        at = time.monotonic()
        for received in got:
            points.note("f", json.loads(received.message.payload)["n"], at)
        return got

    NatsTransport.fetch = timed_fetch  # type: ignore[method-assign]

    def subscribe(service: Service) -> None:
        main.receiver_reactions.subscribe(service)
        bus = service.events
        for sub in list(bus.handlers_for(pinged)):
            bus.unsubscribe(pinged, sub.handler)
            bus.subscribe(pinged, timed(sub.handler), name=sub.name)

    return _app(main, RECEIVER, subscribe, extra)  # type: ignore[no-any-return]
