"""A tenanted context's event crosses deployables over a broker with its tenant (the
`Loom-Tenant` header), and the consumer applies it in that tenant only: tests/e2e/models/
tenants_channels.loom split into Shop (Sales) and Books (Ledger), each its generated package,
started as `loom run --deployable` starts it with `LOOM_BROKER` naming NATS JetStream (and the
in-memory broker). Tenants A and B both have an account for the same customer; each one's
placements reach its own account only.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from uuid import uuid4

import pytest

from loom.build.package import build_model, import_package
from loom.lang import compile_files
from loom.runtime.transports import Message
from loom.testing import settle_all
from tests.e2e.test_tenants_channels import MODEL, OPERATOR, SECRET, A, B, Probe, ok
from tests.runtime.broker.test_log_replay import Started, started  # noqa: F401 - the fixture
from tests.runtime.transports.conftest import NatsBackend, clean_backend

SPLIT = "deployable Shop { contexts: Sales }\ndeployable Books { contexts: Ledger }\n"


def packages(out: Path) -> dict[str, ModuleType]:
    split = out / "split.loom"
    split.write_text(SPLIT, encoding="utf-8")
    result = compile_files([*map(str, MODEL), str(split)])
    assert result.model is not None, [d.message for d in result.diagnostics]
    build_model(result.model, out / "pkg")
    return {d.name: import_package(out / "pkg" / d.name.lower()) for d in result.model.deployables}


@pytest.fixture(params=["memory", "nats"])
async def broker_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return f"memory://tenants-{id(request)}"
    backend = await clean_backend(request)
    assert isinstance(backend, NatsBackend)
    return backend.server.url


async def test_a_tenanted_event_crosses_deployables_with_its_tenant(
    broker_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    started: Started,  # noqa: F811 - the fixture imported above
) -> None:
    monkeypatch.setenv("LOOM_BROKER", broker_url)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    for name in ("LOOM_JWT_PUBLIC_KEY", "LOOM_JWT_AUDIENCE", "LOOM_JWT_ISSUER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("LOOM_TENANT_CLAIM", raising=False)
    pkgs = packages(tmp_path)
    shop = await started.start(pkgs["Shop"], f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}")
    books = await started.start(pkgs["Books"], f"sqlite+aiosqlite:///{tmp_path / 'books.db'}")

    accounts = {}
    for who, name in ((A, "acme"), (B, "globex")):
        accounts[name] = (await ok(books, who, "POST", "/api/accounts", {"customer": "c1"}))["id"]

    async def place(who: dict[str, str], amount: int) -> None:
        body = {"number": f"N-{amount}", "customer": "c1", "amount": amount}
        order = (await ok(shop, who, "POST", "/api/orders", body))["id"]
        await ok(shop, who, "POST", f"/api/orders/{order}/place", {})
        await settle_all([shop, books])

    async def booked(who: dict[str, str], name: str) -> tuple[int, int]:
        found = await ok(books, who, "GET", f"/api/accounts/{accounts[name]}")
        return int(found["placed"]), int(found["total"])

    await place(A, 10)
    assert await booked(A, "acme") == (1, 10)
    assert await booked(B, "globex") == (0, 0)
    await place(B, 7)
    await place(A, 1)
    assert await booked(A, "acme") == (2, 11)
    assert await booked(B, "globex") == (1, 7)

    # and in the consuming deployable, B's token finds nothing of A's
    probe = Probe({accounts["acme"]})
    mine = f"/api/accounts/{accounts['acme']}"
    probe.absent("GET account", await books.get(mine, headers=B))
    probe.absent("PATCH account", await books.patch(mine, json={"total": 0}, headers=B))
    probe.absent("DELETE account", await books.delete(mine, headers=B))
    probe.unseen("list accounts", await books.get("/api/accounts", headers=B))
    probe.report()
    assert probe.attempts == 4
    assert await booked(A, "acme") == (2, 11)


async def test_a_message_without_a_tenant_is_dead_lettered_not_applied(
    broker_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    started: Started,  # noqa: F811 - the fixture imported above
) -> None:
    """A foreign (or malformed) producer's `Sales.Placed` without `Loom-Tenant`: the tenanted
    consumer dead-letters it at once with the reason, and no tenant's account moves."""
    monkeypatch.setenv("LOOM_BROKER", broker_url)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    pkgs = packages(tmp_path)
    shop = await started.start(pkgs["Shop"], f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}")
    books = await started.start(pkgs["Books"], f"sqlite+aiosqlite:///{tmp_path / 'books.db'}")
    mine = (await ok(books, A, "POST", "/api/accounts", {"customer": "c1"}))["id"]

    (link,) = shop.service.brokers.links.values()
    await link.open()
    event_id = str(uuid4())
    await link.transport.publish(
        Message(
            event_id=event_id,
            event_type="Sales.Placed",
            channel="Sales.Placements",
            payload=json.dumps({"order": str(uuid4()), "customer": "c1", "amount": 99}),
            occurred_at=datetime.now(UTC).isoformat(),
        )
    )
    await settle_all([shop, books])

    assert (await ok(books, A, "GET", f"/api/accounts/{mine}"))["placed"] == 0
    (dead,) = (await ok(books, OPERATOR, "GET", "/api/admin/dead-letters"))["items"]
    assert (dead["event_id"], dead["tenant"], dead["attempts"]) == (event_id, None, 1)
    assert "no Loom-Tenant header" in dead["last_error"], dead["last_error"]
    assert "tenanted context Ledger" in dead["last_error"]
    # counted as dead-lettered, though no reactor ran (docs/observability.md#metrics)
    r = await books.get("/metrics", headers=OPERATOR)
    assert r.status_code == 200, r.text
    dead_lettered = [
        line
        for line in r.text.splitlines()
        if line.startswith("loom_deliveries_total{") and 'outcome="dead_lettered"' in line
    ]
    assert dead_lettered and all(line.endswith(" 1.0") for line in dead_lettered), dead_lettered
