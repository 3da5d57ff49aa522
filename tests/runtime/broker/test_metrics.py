"""`GET /metrics` of two deployables on a broker (docs/observability.md#metrics), on the in-memory
broker, NATS and Redis, SQLite and PostgreSQL: each delivery is counted by channel, reactor and
outcome; the relay's publishes are timed; the producer's outbox lag rises while the broker is
down and falls to 0 once it is back; its broker lag while the consuming deployable is down."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from loom.testing import ServiceClient, settle_all
from tests.scrape import sample, scrape
from tests.waiting import until

from .conftest import INVENTORY, ORDERS, Topology
from .test_topology import MARK, RESERVE, place, stock

PLACED = "Orders.Placed"


async def lag(client: ServiceClient) -> tuple[float | None, float | None]:
    samples = await scrape(client)
    return (
        sample(samples, "loom_outbox_pending", channel=PLACED),
        sample(samples, "loom_outbox_oldest_age_seconds", channel=PLACED),
    )


async def lag_is(client: ServiceClient, pending: float) -> bool:
    count, age = await lag(client)
    return count == pending and (age == 0) is (pending == 0)


async def test_deliveries_and_the_lag_while_the_broker_is_down(
    topology: Topology, two_urls: tuple[str, str]
) -> None:
    orders = await topology.start(ORDERS, two_urls[0])
    inventory = await topology.start(INVENTORY, two_urls[1])
    await stock(inventory, "lamp")
    for _ in range(2):
        await place(orders)
    await settle_all([orders, inventory])
    await until(partial(lag_is, orders, 0), timeout=20, what="nothing left to publish")
    applied = {"channel": PLACED, "reactor": RESERVE, "outcome": "applied"}
    total = "loom_deliveries_total"
    samples = await scrape(inventory)
    assert sample(samples, total, **applied) == 2, samples
    await until(lambda: _counted(orders, MARK), timeout=20, what="Orders applied both reservations")
    assert (sample(await scrape(orders), "loom_relay_publish_duration_seconds_count") or 0) >= 1

    await topology.harness.down()
    try:
        await place(orders)
        await place(orders)
        await until(
            partial(lag_is, orders, 2), timeout=20, what="two events wait while the broker is down"
        )
    finally:
        await topology.harness.up()
    await until(partial(lag_is, orders, 0), timeout=30, what="the lag falls to 0 once it is back")
    await until(lambda: _reserved(inventory, 4), timeout=30, what="Inventory applied the later two")


async def broker_pending(client: ServiceClient) -> float | None:
    return sample(await scrape(client), "loom_broker_pending", channel=PLACED, consumer=RESERVE)


async def test_the_broker_lag_rises_while_the_consumer_is_down_then_falls_to_zero(
    topology: Topology, two_urls: tuple[str, str]
) -> None:
    """The outbox's lag stays 0 while the consuming deployable is down (the relay handed the
    events to the broker); the producer's `loom_broker_pending` shows them waiting."""
    orders = await topology.start(ORDERS, two_urls[0])
    inventory = await topology.start(INVENTORY, two_urls[1])
    await stock(inventory, "lamp")
    await place(orders)
    await settle_all([orders, inventory])
    await until(lambda: _is(broker_pending(orders), 0), timeout=20, what="nothing owed at first")
    await topology.stop(inventory)
    for _ in range(3):
        await place(orders)
    await orders.service.settle()
    await until(lambda: _is(broker_pending(orders), 3), timeout=20, what="three owed to Inventory")
    assert await lag_is(orders, 0)  # published: the outbox knows nothing of the consumer
    print(f"while Inventory is down: {await broker_pending(orders)} pending on the broker")
    inventory = await topology.start(INVENTORY, two_urls[1])
    await settle_all([orders, inventory])
    await until(lambda: _is(broker_pending(orders), 0), timeout=30, what="the lag falls to 0")
    # counted since its restart: the three that waited
    await until(lambda: _reserved(inventory, 3), timeout=30, what="Inventory applied the three")


async def _is(read: Awaitable[float | None], expected: float) -> bool:
    return await read == expected


async def _counted(client: ServiceClient, reactor: str) -> bool:
    found = sample(
        await scrape(client),
        "loom_deliveries_total",
        channel="Inventory.Reserved",
        reactor=reactor,
        outcome="applied",
    )
    return found == 2


async def _reserved(client: ServiceClient, n: int) -> bool:
    applied = {"channel": PLACED, "reactor": RESERVE, "outcome": "applied"}
    return sample(await scrape(client), "loom_deliveries_total", **applied) == n


async def test_retries_dead_letters_and_a_redrive_are_counted(
    topology: Topology, two_urls: tuple[str, str]
) -> None:
    orders = await topology.start(ORDERS, two_urls[0])
    inventory = await topology.start(INVENTORY, two_urls[1])
    await place(orders, "ghost")  # no stock for it: reserveStock fails every time (3 attempts)
    await settle_all([orders, inventory])
    outcome = partial(sample, name="loom_deliveries_total", channel=PLACED, reactor=RESERVE)

    async def counts() -> tuple[float | None, ...]:
        s = await scrape(inventory)
        return (
            outcome(s, outcome="retried"),
            outcome(s, outcome="dead_lettered"),
            outcome(s, outcome="applied"),
            sample(s, "loom_dead_letters", kind="event"),
        )

    await until(lambda: _equal(counts, (2, 1, None, 1)), timeout=20, what="two retries, then dead")
    await stock(inventory, "ghost")
    dead = (await inventory.get("/api/admin/dead-letters")).json()["items"][0]
    r = await inventory.post(f"/api/admin/dead-letters/{dead['event_id']}/redrive")
    assert r.status_code == 204, r.text
    await settle_all([orders, inventory])
    await until(lambda: _equal(counts, (2, 1, 1, 0)), timeout=20, what="redriven, applied once")


async def _equal(read: Callable[[], Awaitable[object]], expected: object) -> bool:
    return await read() == expected


async def test_a_redelivery_the_inbox_skips_is_counted(
    topology: Topology, two_urls: tuple[str, str]
) -> None:
    orders = await topology.start(ORDERS, two_urls[0])
    inventory = await topology.start(INVENTORY, two_urls[1])
    await stock(inventory, "lamp")
    inventory.service.faults.crash_consumer(after="commit")  # applied, then dies before its ack
    await place(orders)
    await orders.service.settle()
    await until(lambda: _reserved(inventory, 1), timeout=20, what="applied before the crash")
    await topology.stop(inventory)
    inventory = await topology.start(INVENTORY, two_urls[1])  # counts from 0 again
    skipped = {"channel": PLACED, "reactor": RESERVE, "outcome": "skipped_duplicate"}

    async def skipped_once() -> bool:
        return sample(await scrape(inventory), "loom_deliveries_total", **skipped) == 1

    await until(skipped_once, timeout=20, what="the redelivery after ack_wait, skipped")
    applied = {**skipped, "outcome": "applied"}
    assert sample(await scrape(inventory), "loom_deliveries_total", **applied) is None
