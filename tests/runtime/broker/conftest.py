"""Two deployables of one model (tests/runtime/broker/shop.loom: Orders and Inventory), each a
real service on its own database, connected by a broker.

`transport_factory` is the broker under test: one per test, handing out transports to it (one per
service, as each deployable has its own connection) and able to take it down and bring it back.
It runs every test on the in-memory broker and on the real servers: NATS JetStream and Redis
Streams (the session's throwaway servers, tests/brokers.py), each test on a clean broker."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from loom.runtime import Channel, EventBus, Service, create_app
from loom.runtime.transports import ConsumerSpec, Transport
from loom.testing import ServiceClient, build_service
from tests.conftest import create_pg_database
from tests.pgcluster import Cluster
from tests.runtime.transports.conftest import KINDS, Backend, clean_backend

MODEL = [Path(__file__).resolve().parent / "shop.loom"]
ORDERS, INVENTORY = ("Orders",), ("Inventory",)


class Harness:
    """A broker of one kind: `transport()` connects one more service to it; `down` / `up` stop
    and restart it (the in-memory one refuses every call meanwhile)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def transport(self) -> Transport:
        return self.backend.new()

    async def down(self) -> None:
        self.backend.stop()

    async def up(self) -> None:
        self.backend.start()


@pytest.fixture(params=KINDS)
async def transport_factory(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    backend = await clean_backend(request)
    yield Harness(backend)
    await backend.close()


@pytest.fixture(scope="session")
def main() -> ModuleType:
    return build_service(MODEL)


def context_of(name: str) -> str:
    return name.split(".", 1)[0]


def broker_channels(main: ModuleType, deployables: Sequence[Sequence[str]]) -> list[Channel]:
    """The model's channels, each with the consumers that read it from the broker: every
    reaction to one of its events running in another deployable than the event's context (what
    the generator will emit once it knows the deployables)."""
    bus = EventBus()
    main.subscribe(SimpleNamespace(events=bus))  # every reaction of the model, by its name
    home = {ctx: i for i, contexts in enumerate(deployables) for ctx in contexts}
    out = []
    for channel in main.CHANNELS:
        specs = []
        for event_type in channel.events:
            cls = bus.event_class(event_type)
            assert cls is not None
            for sub in bus.handlers_for(cls):
                if home[context_of(sub.name)] != home[context_of(event_type)]:
                    specs.append(ConsumerSpec(sub.name, channel.name, (event_type,)))
        out.append(dataclasses.replace(channel, consumers=specs))
    return out


def subscriber(main: ModuleType, contexts: Sequence[str]) -> Callable[[Service], None]:
    """Subscribe the reactions of `contexts` only (each context's generated `subscribe`)."""

    def subscribe(service: Service) -> None:
        for ctx in contexts:
            getattr(main, f"{ctx.lower()}_reactions").subscribe(service)

    return subscribe


def routers(main: ModuleType, contexts: Sequence[str]) -> list[Any]:
    found = []
    for ctx in contexts:
        for kind in ("routes", "workflows", "projections"):
            module = getattr(main, f"{ctx.lower()}_{kind}", None)
            if module is not None:
                found.append(module.router)
    return found


class Topology:
    """Services started on demand, stopped (in reverse) when the test ends."""

    def __init__(self, main: ModuleType, harness: Harness) -> None:
        self.main = main
        self.harness = harness
        self.channels = broker_channels(main, [ORDERS, INVENTORY])
        self._stack = AsyncExitStack()

    async def start(self, contexts: Sequence[str], url: str, **options: Any) -> ServiceClient:
        """A service of `contexts` on `url`, started (`app` takes the options)."""
        stack = AsyncExitStack()
        app = self.app(contexts, url, **options)
        await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(ServiceClient(app, self.main, settle=False))
        client.stack = stack  # type: ignore[attr-defined]
        self._stack.push_async_callback(stack.aclose)
        return client

    def app(
        self,
        contexts: Sequence[str],
        url: str,
        *,
        subscribe: Callable[[Service], None] | None = None,
        brokers: Mapping[str, Transport] | None = None,
        channels: Sequence[Channel] | None = None,
        relay: bool = True,
        consumer_options: Mapping[str, Any] | None = None,
    ) -> Any:
        return create_app(
            title=", ".join(contexts),
            metadata=self.main.metadata,
            routers=routers(self.main, contexts),
            database_url=url,
            model_revision=self.main.MODEL_REVISION,
            channels=self.channels if channels is None else channels,
            event_types=self.main.EVENT_TYPES,
            subscribe=subscribe or subscriber(self.main, contexts),
            contexts=contexts,
            brokers={"": self.harness.transport()} if brokers is None else brokers,
            relay=relay,
            relay_options={"poll_interval": 0.05, "lease": timedelta(seconds=0.5)},
            consumer_options={"fetch_timeout": 0.05, **(consumer_options or {})},
        )

    async def stop(self, client: ServiceClient) -> None:
        """Stop one service now (its lifespan ends: consumers, relay, transports, engine)."""
        await client.stack.aclose()  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self._stack.aclose()


@pytest.fixture
async def topology(main: ModuleType, transport_factory: Harness) -> AsyncIterator[Topology]:
    t = Topology(main, transport_factory)
    try:
        yield t
    finally:
        await t.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_urls(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """A database for each deployable: two SQLite files, or two PostgreSQL databases."""
    if request.param == "sqlite":
        return (
            f"sqlite+aiosqlite:///{tmp_path / 'orders.db'}",
            f"sqlite+aiosqlite:///{tmp_path / 'inventory.db'}",
        )
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return (cluster.url(create_pg_database(cluster)), cluster.url(create_pg_database(cluster)))


@pytest.fixture
def sqlite_urls(tmp_path: Path) -> tuple[str, str]:
    return (
        f"sqlite+aiosqlite:///{tmp_path / 'orders.db'}",
        f"sqlite+aiosqlite:///{tmp_path / 'inventory.db'}",
    )


def facts(caplog: pytest.LogCaptureFixture, fact: str, **match: Any) -> list[dict[str, Any]]:
    """The `loom.events` lines of `fact` whose members equal `match`."""
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [x for x in found if x["event"] == fact and all(x.get(k) == v for k, v in match.items())]


@pytest.fixture(autouse=True)
def _capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="loom")
