"""A tenanted context's event crosses deployables over a broker with its tenant (the
`Loom-Tenant` header), and the consumer applies it in that tenant only: tests/e2e/models/
tenants_channels.loom split into Shop (Sales) and Books (Ledger), each its generated package,
started as `loom run --deployable` starts it with `LOOM_BROKER` naming NATS JetStream (and the
in-memory broker). Tenants A and B both have an account for the same customer; each one's
placements reach its own account only.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any
from uuid import uuid4

import jwt
import pytest

from loom.build import build_model, import_package
from loom.lang import compile_files
from loom.runtime.transports import Message
from loom.testing import ServiceClient, settle_all
from tests.runtime.broker.test_log_replay import Started, started  # noqa: F401 - the fixture
from tests.runtime.transports.conftest import NatsBackend, clean_backend

MODEL = Path(__file__).resolve().parents[2] / "e2e" / "models" / "tenants_channels.loom"
SPLIT = "deployable Shop { contexts: Sales }\ndeployable Books { contexts: Ledger }\n"
SECRET = "a-test-secret-that-is-long-enough-for-hs256"


def token(**claims: Any) -> dict[str, str]:
    body = {"sub": "ann", "exp": int(time.time()) + 600, **claims}
    return {"Authorization": "Bearer " + jwt.encode(body, SECRET, algorithm="HS256")}


A = token(tenant="acme")
B = token(sub="bob", tenant="globex")


def packages(out: Path) -> dict[str, ModuleType]:
    split = out / "split.loom"
    split.write_text(SPLIT, encoding="utf-8")
    result = compile_files([str(MODEL), str(split)])
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


async def ok(
    c: ServiceClient, who: dict[str, str], method: str, path: str, body: Any = None
) -> Any:
    r = await c.request(method, path, json=body, headers=who)
    assert r.status_code < 300, r.text
    return r.json() if r.content else None


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

    # and across the broker, B's token still finds nothing of A's
    attempts = leaked = 0
    for path in (f"/api/accounts/{accounts['acme']}",):
        attempts += 1
        leaked += (await books.get(path, headers=B)).status_code != 404
    print(f"cross-tenant attempts: {attempts}, leaked: {leaked}")
    assert leaked == 0


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
    operator = token(sub="ops", roles=["admin"])
    (dead,) = (await ok(books, operator, "GET", "/api/admin/dead-letters"))["items"]
    assert (dead["event_id"], dead["tenant"], dead["attempts"]) == (event_id, None, 1)
    assert "no Loom-Tenant header" in dead["last_error"], dead["last_error"]
    assert "tenanted context Ledger" in dead["last_error"]
