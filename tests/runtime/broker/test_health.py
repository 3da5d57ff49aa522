"""`GET /readyz` of a deployable follows its broker (docs/observability.md#health): ready while
connected, 503 `not-ready` naming the broker while it is down, ready again once it is back; on the
in-memory broker, NATS and Redis, SQLite and PostgreSQL."""

from __future__ import annotations

from functools import partial
from typing import Any

from loom.testing import ServiceClient
from tests.waiting import until

from .conftest import INVENTORY, ORDERS, Topology


async def ready_status(client: ServiceClient, status: int) -> Any:
    r = await client.get("/readyz")
    return r if r.status_code == status else None


async def test_a_broker_down_is_not_ready_then_ready_again(
    topology: Topology, two_urls: tuple[str, str]
) -> None:
    orders = await topology.start(ORDERS, two_urls[0])
    inventory = await topology.start(INVENTORY, two_urls[1])
    for client in (orders, inventory):
        r = await until(partial(ready_status, client, 200), timeout=20, what="ready at start")
        assert r.json() == {"status": "ready"}
    await topology.harness.down()
    try:
        for client in (orders, inventory):
            r = await until(
                partial(ready_status, client, 503), timeout=20, what="not ready, broker down"
            )
            body = r.json()
            assert body["type"] == "urn:loom:problem:not-ready", body
            assert body["reasons"] and all(
                x.startswith("the broker default is not connected") for x in body["reasons"]
            ), body
            assert (await client.get("/healthz")).status_code == 200
    finally:
        await topology.harness.up()
    for client in (orders, inventory):
        await until(partial(ready_status, client, 200), timeout=30, what="ready once it is back")
