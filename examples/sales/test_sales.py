"""The sales model, tested through its HTTP API with Loom's test kit (`loom.testing`).

`serve` compiles the model (every `.loom` file of this folder: one context may span files),
generates its service and runs it in this process on a throwaway SQLite file. Run with `pytest`."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

from loom.testing import ServiceClient, serve

MODEL = sorted(Path(__file__).parent.glob("*.loom"))


async def register(client: ServiceClient, name: str, credit: str) -> str:
    body = {"name": name, "creditLimit": credit}
    r = await client.post("/api/workflows/register_customer", json=body)
    assert r.status_code == 200, r.text
    return str(r.json())


async def credit_of(client: ServiceClient, customer: str) -> Decimal:
    r = await client.get(f"/api/customers/{customer}")
    assert r.status_code == 200, r.text
    return Decimal(r.json()["creditLimit"])


async def transfers_credit(database_url: str) -> None:
    async with serve(MODEL, database_url) as client:
        ada = await register(client, "Ada", "100.50")
        bob = await register(client, "Bob", "0")
        body = {"src": ada, "dst": bob, "amount": "40.25"}
        r = await client.post("/api/workflows/transfer_credit", json=body)
        assert r.status_code == 204, r.text
        assert await credit_of(client, ada) == Decimal("60.25")
        assert await credit_of(client, bob) == Decimal("40.25")

        # more than Ada has: refused, and neither customer changed (the workflow is transactional)
        body = {"src": ada, "dst": bob, "amount": "1000"}
        r = await client.post("/api/workflows/transfer_credit", json=body)
        assert r.status_code == 422, r.text
        assert await credit_of(client, bob) == Decimal("40.25")


def test_credit_moves_between_customers_all_or_nothing(tmp_path: Path) -> None:
    asyncio.run(transfers_credit(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"))
