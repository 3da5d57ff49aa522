"""A database from before the flow of a correlation (SQLite and PostgreSQL): its `__loom_inbox`
lacks `kind`, `event_type`, `correlation_id`, `causation_id` and `occurred_at` and their index, and
its process instances their journal (`_steps`), so the service refuses it (`SchemaMismatch`), and
`loom run --migrate` adds them; an order placed then shows in `GET /api/admin/flow/{id}`
(docs/console.md, "Flow of one correlation"), and its instance's steps in its timeline."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from loom.runtime import SchemaMismatch
from loom.testing import serve
from tests.liveserver import ROOT, free_port, running

SHOP = ROOT / "examples" / "shop" / "shop.loom"
INSTANCES = "orders_payment_deadline_instances"
FLOW_COLUMNS = ("kind", "event_type", "correlation_id", "causation_id", "occurred_at")


async def _before_the_flow(model: Path, url: str) -> None:
    async with serve([model], url):
        pass
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("DROP INDEX ix___loom_inbox_correlation"))
            for column in FLOW_COLUMNS:
                await conn.execute(text(f"ALTER TABLE __loom_inbox DROP COLUMN {column}"))
            await conn.execute(text(f"ALTER TABLE {INSTANCES} DROP COLUMN _steps"))
    finally:
        await engine.dispose()


async def _refused(model: Path, url: str) -> str:
    with pytest.raises(SchemaMismatch) as refused:
        async with serve([model], url):
            pass
    return str(refused.value)


def test_an_old_inbox_is_refused_then_migrated(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):  # the loopback operator's
        monkeypatch.delenv(name, raising=False)
    model = Path(shutil.copy(SHOP, tmp_path / "shop.loom"))
    asyncio.run(_before_the_flow(model, database_url))
    said = asyncio.run(_refused(model, database_url))
    assert "__loom_inbox" in said and f"{INSTANCES}._steps" in said, said
    args = (str(model), "--database-url", database_url, "--migrate")
    with running(*args, port=free_port()) as base:
        body = {"sku": "lamp", "quantity": 1, "failPayment": False}
        headers = {"X-Correlation-Id": "after-the-upgrade"}
        r = httpx.post(f"{base}/api/workflows/place_order", json=body, headers=headers)
        assert r.status_code == 200, r.text
        wanted = "Orders.settleOrder.on(Payment.PaymentSucceeded)"
        deadline = time.monotonic() + 20
        names: list[str] = []
        while wanted not in names:
            flow = httpx.get(f"{base}/api/admin/flow/after-the-upgrade").json()
            names = [e["name"] for e in flow["entries"]]
            assert time.monotonic() < deadline, names
            time.sleep(0.05)  # a pause between two polls, not a wait for the outcome
        assert "Inventory.reserveStock.on(Orders.OrderPlaced)" in names
        order = r.json()
        instance = f"{base}/api/admin/processes/Orders.PaymentDeadline/instances/{order}"
        steps = [s["step"] for s in httpx.get(instance).json()["steps"]]
        assert steps[0] == "Orders.PaymentDeadline.create(OrderPlaced)", steps
