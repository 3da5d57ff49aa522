"""The banking model, tested through its HTTP API with Loom's test kit (`loom.testing`).

`serve` compiles the model, generates its service and runs it in this process on a throwaway
SQLite file: the client's requests go to the app directly, no port, no server to start. Run with
`pytest`; edit the model and the test together."""

from __future__ import annotations

import asyncio
from pathlib import Path

from loom.testing import ServiceClient, serve

MODEL = sorted(Path(__file__).parent.glob("*.loom"))


async def open_account(client: ServiceClient, owner: str, number: str) -> str:
    r = await client.post("/api/workflows/open_account", json={"owner": owner, "number": number})
    assert r.status_code == 200, r.text
    return str(r.json())


async def transfers(database_url: str) -> None:
    async with serve(MODEL, database_url) as client:
        r = await client.post("/api/workflows/register_customer", json={"name": "Ada"})
        assert r.status_code == 200, r.text
        ada = r.json()
        a = await open_account(client, ada, "A-1")
        b = await open_account(client, ada, "A-2")
        r = await client.post(f"/api/accounts/{a}/deposit", json={"amount": 100})
        assert r.status_code == 204, r.text  # an operation that returns nothing

        body = {"fromAccount": a, "toAccount": b, "amount": 30}
        r = await client.post("/api/workflows/transfer", json=body)
        assert (r.status_code, r.json()) == (200, 70)
        assert (await client.get(f"/api/accounts/{b}")).json()["balance"] == 30

        # a refused precondition is a problem answer, and the transfer changed nothing
        body = {"fromAccount": a, "toAccount": b, "amount": 1000}
        r = await client.post("/api/workflows/transfer", json=body)
        assert r.status_code == 422, r.text
        assert r.json()["detail"] == "insufficient funds"
        assert (await client.get(f"/api/accounts/{a}")).json()["balance"] == 70


def test_a_transfer_moves_money_and_a_refused_one_moves_none(tmp_path: Path) -> None:
    asyncio.run(transfers(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"))
