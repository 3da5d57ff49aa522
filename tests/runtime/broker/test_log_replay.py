"""A `retention: log` channel replays into a consumer added by a later release (issue 12, §2):
the first release has Senders and Receivers (replay/sender.loom + first.loom); events are
published and consumed; then a later release adds a context of its own, Audit, in a deployable of
its own (audit.loom + later.loom), which reads the same channel. Started after the events were
published, it catches up from the start of the stream; the first consumer applies nothing twice.

Each deployable is its generated package (`loom build`), started as `loom run --deployable`
starts it, with `LOOM_BROKER` naming the broker: the in-memory one, NATS JetStream, Redis Streams.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from loom.build.package import build_model, import_package
from loom.lang import compile_files
from loom.testing import ServiceClient, settle_all
from tests.runtime.transports.conftest import NatsBackend, RedisBackend, clean_backend

HERE = Path(__file__).parent / "replay"
FIRST = [HERE / "sender.loom", HERE / "first.loom"]
LATER = [HERE / "sender.loom", HERE / "audit.loom", HERE / "later.loom"]


def _packages(files: Sequence[Path], out: Path) -> dict[str, ModuleType]:
    result = compile_files([str(f) for f in files])
    assert result.model is not None, [d.message for d in result.diagnostics]
    build_model(result.model, out)
    return {d.name: import_package(out / d.name.lower()) for d in result.model.deployables}


@pytest.fixture(params=["memory", "nats", "redis"])
async def broker_url(request: pytest.FixtureRequest) -> str:
    """The broker's URL, the NATS or Redis server clean (the servers are the session's)."""
    if request.param == "memory":
        return f"memory://replay-{id(request)}"
    backend = await clean_backend(request)
    assert isinstance(backend, NatsBackend | RedisBackend)
    return backend.server.url


class Started:
    def __init__(self) -> None:
        self.stack = AsyncExitStack()

    async def start(self, main: ModuleType, url: str) -> ServiceClient:
        app = main.build_app(url)
        await self.stack.enter_async_context(app.router.lifespan_context(app))
        return await self.stack.enter_async_context(ServiceClient(app, main, settle=False))


@pytest.fixture
async def started() -> AsyncIterator[Started]:
    s = Started()
    async with s.stack:
        yield s


async def _rows(client: ServiceClient, path: str) -> list[dict[str, Any]]:
    r = await client.get(path, params={"limit": 100})
    assert r.status_code == 200, r.text
    body = r.json()
    return body["items"] if isinstance(body, dict) else body


async def test_a_consumer_added_later_catches_up_from_the_start(
    broker_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: Started
) -> None:
    monkeypatch.setenv("LOOM_BROKER", broker_url)
    first = _packages(FIRST, tmp_path / "first")
    later = _packages(LATER, tmp_path / "later")
    db = {name: f"sqlite+aiosqlite:///{tmp_path / name}.db" for name in later}

    senders = await started.start(first["Senders"], db["Senders"])
    receivers = await started.start(first["Receivers"], db["Receivers"])
    for n in range(5):
        assert (await senders.post("/api/workflows/ping", json={"n": n})).status_code == 200
    await settle_all([senders, receivers])
    assert sorted(p["n"] for p in await _rows(receivers, "/api/pongs")) == list(range(5))

    # the later release: a deployable that did not exist when the five were published
    auditors = await started.start(later["Auditors"], db["Auditors"])
    for n in range(5, 7):
        assert (await senders.post("/api/workflows/ping", json={"n": n})).status_code == 200
    await settle_all([senders, receivers, auditors])

    seen = sorted(s["n"] for s in await _rows(auditors, "/api/seens"))
    pongs = sorted(p["n"] for p in await _rows(receivers, "/api/pongs"))
    lost = len(set(range(7)) - set(seen))
    doubled = len(pongs) - len(set(pongs)) + len(seen) - len(set(seen))
    print(f"{broker_url.split(':')[0]}: Audit replayed {len(seen)} of 7, Receiver {len(pongs)}")
    print(f"lost {lost}, doubled {doubled}")
    assert seen == list(range(7)), "the consumer added later missed events published before it"
    assert pongs == list(range(7)), "the first consumer applied an event twice, or missed one"
