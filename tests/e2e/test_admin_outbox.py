"""The outbox for operators over HTTP, on SQLite and PostgreSQL (docs/events.md, "The outbox for
operators"): per channel its pending rows, their lag, its dead letters and the last relay error;
publish-now brings the waiting retries forward and the relay delivers them; a tenant's
administrator sees and publishes its tenant's rows only (`leaked: 0`); both in the audit log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.tokens import token, use_secret

MODEL = Path(__file__).resolve().parent / "models" / "admin_ops.loom"
START = datetime(2030, 5, 6, 9, 0, tzinfo=UTC)
OPERATOR = token(sub="ops", roles=["admin"])
A = token(tenant="acme")
B = token(sub="bob", tenant="globex")
A_ADMIN = token(sub="ann", tenant="acme", roles=["admin"])
OUTBOX = "/api/admin/outbox"


async def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json() if r.content else None


async def order(c: ServiceClient, who: dict[str, str], customer: str) -> str:
    r = await c.post("/api/orders", json={"customer": customer, "amount": 5}, headers=who)
    return str((await ok(r, 201))["id"])


async def place(c: ServiceClient, who: dict[str, str], customer: str) -> str:
    """An order placed for `customer` in `who`'s tenant (its Placed event delivered)."""
    id = await order(c, who, customer)
    await ok(await c.post(f"/api/orders/{id}/place", headers=who), 204)
    return id


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def ops(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve([MODEL], database_url, clock=clock) as client:
        yield client


def channel(view: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [c for c in view if c["channel"] == name]
    return found


async def test_lag_last_error_and_publish_now(ops: ServiceClient, clock: VirtualClock) -> None:
    c = ops
    for who in (A, A, B):
        id = await order(c, who, "zed")  # no account for zed: the shipment's reaction fails
        await ok(await c.post(f"/api/orders/{id}/ship", headers=who), 204)
    await place(c, B, "zed")  # dies at once (maxAttempts 1)
    await clock.jump(timedelta(minutes=10))

    view = await ok(await c.get(OUTBOX, headers=OPERATOR))
    shipments = channel(view, "Sales.Shipments")
    assert (shipments["pending"], shipments["retrying"], shipments["dead"]) == (3, 3, 0)
    assert shipments["lag_seconds"] == 600.0
    assert "zed" in shipments["last_error"] or "Account" in shipments["last_error"]
    placements = channel(view, "Sales.Placements")
    assert (placements["pending"], placements["dead"], placements["lag_seconds"]) == (0, 1, 0.0)
    assert placements["last_error"] is None and placements["oldest_pending_at"] is None

    mine = await ok(await c.get(OUTBOX, headers=A_ADMIN))
    assert channel(mine, "Sales.Shipments")["pending"] == 2
    assert channel(mine, "Sales.Placements")["dead"] == 0

    # the cause fixed in acme; its retries are an hour away: publish now
    await ok(await c.post("/api/accounts", json={"customer": "zed"}, headers=A), 201)
    published = await ok(await c.post(f"{OUTBOX}/publish-now", headers=A_ADMIN))
    assert published == {"made_due": 2, "pending": 2}
    (account,) = (await ok(await c.get("/api/accounts", headers=A)))["items"]
    assert account["shipped"] == 2
    assert (
        channel(await ok(await c.get(OUTBOX, headers=A_ADMIN)), "Sales.Shipments")["pending"] == 0
    )
    left = channel(await ok(await c.get(OUTBOX, headers=OPERATOR)), "Sales.Shipments")
    assert left["pending"] == 1  # globex's still waits for its retry

    audit = (await ok(await c.get("/api/admin/audit", headers=A_ADMIN)))["items"]
    assert [(a["action"], a["actor"], a["tenant"], a["outcome"]) for a in audit] == [
        ("publish-now", "ann", "acme", "made_due=2")
    ]


async def test_a_tenant_admin_sees_its_own_rows_only(ops: ServiceClient) -> None:
    c = ops
    id = await order(c, B, "zed")
    await ok(await c.post(f"/api/orders/{id}/ship", headers=B), 204)
    await place(c, B, "zed")
    attempts = 0
    leaked: list[tuple[Any, ...]] = []
    view = await ok(await c.get(OUTBOX, headers=A_ADMIN))
    attempts += 1
    if any(ch["pending"] or ch["dead"] or ch["last_error"] for ch in view):
        leaked.append(("outbox", view))
    attempts += 1
    published = await ok(await c.post(f"{OUTBOX}/publish-now", headers=A_ADMIN))
    if published != {"made_due": 0, "pending": 0}:
        leaked.append(("publish-now", published))
    assert (
        channel(await ok(await c.get(OUTBOX, headers=OPERATOR)), "Sales.Shipments")["retrying"] == 1
    )  # globex's retry was not brought forward
    for who in (A, B, {}):
        for method, path in (("GET", OUTBOX), ("POST", f"{OUTBOX}/publish-now")):
            attempts += 1
            r = await c.request(method, path, headers=who)
            if r.status_code not in (401, 403):
                leaked.append(("no admin", who, path, r.status_code, r.text))
    print(f"cross-tenant attempts: {attempts}, leaked: {len(leaked)}")
    assert not leaked, leaked


async def test_a_service_without_channels_has_an_empty_outbox(database_url: str) -> None:
    desk = Path(__file__).resolve().parent / "models" / "desk_timers.loom"
    async with serve([desk], database_url) as c:
        assert await ok(await c.get(OUTBOX)) == []
        assert await ok(await c.post(f"{OUTBOX}/publish-now")) == {"made_due": 0, "pending": 0}
        audit = (await ok(await c.get("/api/admin/audit")))["items"]
        assert [(a["action"], a["actor"]) for a in audit] == [("publish-now", "loopback")]
