"""The support model, tested through its HTTP API with Loom's test kit (`loom.testing`).

`serve` runs the service in this process on a throwaway SQLite file, with the model's extern
operations implemented by support_externs.py (beside this file, so importable: pytest puts this
folder on the path), as `loom run . --extern support_externs` does. Run with `pytest`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import support_externs

from loom.serving.settings import ServiceSettings
from loom.testing import ServiceClient, serve

MODEL = sorted(Path(__file__).parent.glob("*.loom"))
EXTERNS = ServiceSettings(extern="support_externs")


async def ticket(client: ServiceClient, ticket_id: str) -> Any:
    r = await client.get(f"/api/tickets/{ticket_id}")
    assert r.status_code == 200, r.text
    return r.json()


async def notifications(database_url: str) -> None:
    async with serve(MODEL, database_url, settings=EXTERNS) as client:
        body = {"code": "T-1", "customer": "acme", "dueAt": "2999-01-01T00:00:00Z"}
        r = await client.post("/api/tickets", json=body)
        assert r.status_code == 201, r.text
        t = r.json()["id"]  # a created aggregate answers 201 with its body

        # the extern operation: its body is support_externs.TicketExterns.notify
        r = await client.post(f"/api/tickets/{t}/notify", json={"channel": "sms"})
        assert r.status_code == 204, r.text
        assert (await ticket(client, t))["lastNotified"] == "sms"
        assert support_externs.SENT == [("T-1", "sms")]

        # a second ticket with the same code is refused: the code is the ticket's key
        r = await client.post("/api/tickets", json=body)
        assert r.status_code == 409, r.text


def test_a_ticket_is_notified_through_the_extern_operation(tmp_path: Path) -> None:
    asyncio.run(notifications(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"))
