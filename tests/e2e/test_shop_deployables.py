"""The proof through the real path (issue 12, §7): the shop of examples/shop as three
`loom run --deployable` processes (Orders, Inventory, Payment), each on its own database, over a
real NATS JetStream server on file storage (and once over Redis Streams), driven over HTTP.

The happy path, the compensation and the payment deadline; then faults bounded in count and time
(kill -9 of each deployable in turn mid-flow, the NATS server killed and stopped mid-flow), two
replicas of Inventory on one channel, and the same on Redis. After each, the books
(tests/chaos/deployables.py) count every order's terminal state, the rows each reaction wrote,
the inbox rows of every consumer against the events of its type, each deployable's outbox and its
dead letters, and print the table (docs/events.md, "Proof: the shop as three deployables").

The PostgreSQL topology is started once for the module and carries the first scenario on into
the faults and the replicas: the books of each are over every order placed so far."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from functools import partial
from pathlib import Path

import httpx
import pytest

from tests.brokers import NatsServer, RedisServer, running_nats, running_redis
from tests.chaos import conftest as chaos
from tests.chaos.conftest import Report
from tests.chaos.deployables import (
    DEPLOYABLES,
    Deployable,
    Shop,
    books,
    mix,
    place,
    shop_model,
    statuses,
    wait_terminal,
)
from tests.conftest import _broker, create_pg_database
from tests.pgcluster import Cluster
from tests.waiting import until

pytestmark = pytest.mark.postgres

report = chaos.report  # the fixture that prints past the capture
RESERVE = "Inventory.reserveStock.on(Orders.OrderPlaced)"


def _databases(cluster: Cluster) -> dict[str, str]:
    return {d: cluster.url(create_pg_database(cluster)) for d in DEPLOYABLES}


class Topology:
    """A shop, the broker it runs on, and every order placed on it so far."""

    def __init__(self, shop: Shop, broker: NatsServer | None = None) -> None:
        self.shop = shop
        self.broker = broker
        self.placed: dict[str, bool] = {}

    async def place(self, client: httpx.AsyncClient, fails: list[bool]) -> None:
        ids = await asyncio.gather(*(place(client, self.shop, f) for f in fails))
        self.placed.update(zip(ids, fails, strict=True))


def _topology(
    folder: Path, databases: dict[str, str], broker: str, deadline: str | None = None
) -> Shop:
    model = shop_model(folder / "model", deadline=deadline)
    return Shop.create(model, databases, broker, folder)


@pytest.fixture(scope="module")
def nats() -> Iterator[NatsServer]:
    """A NATS server of this module's own: the faults restart it."""
    yield from _broker(running_nats, "NATS")


@pytest.fixture(scope="module")
def pg_shop(
    pg_cluster: Cluster, nats: NatsServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Topology]:
    shop = _topology(tmp_path_factory.mktemp("pg-shop"), _databases(pg_cluster), nats.url)
    try:
        asyncio.run(shop.start())
        yield Topology(shop, nats)
    finally:
        shop.stop()


@pytest.fixture
def fresh_nats() -> Iterator[NatsServer]:
    yield from _broker(running_nats, "NATS")


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    """A Redis server of this test's own (an fsynced append-only file)."""
    yield from _broker(running_redis, "Redis")


async def _settled_books(
    top: Topology, report: Report, title: str, timeout: float = 60
) -> list[str]:
    async with httpx.AsyncClient(timeout=30) as c:
        waited = await wait_terminal(c, top.shop, top.placed, timeout)
    b = await books(top.shop, top.placed, settle_timeout=timeout)
    report([*b.table(f"{title} (terminal after {waited:.1f}s)")])
    return b.problems()


async def test_happy_path_and_compensation_on_postgres(pg_shop: Topology, report: Report) -> None:
    async with httpx.AsyncClient(timeout=30) as c:
        await pg_shop.place(c, [False, True, False, True])
    assert await _settled_books(pg_shop, report, "shop on NATS, 3 PostgreSQL databases") == []
    async with httpx.AsyncClient(timeout=30) as c:
        order = next(o for o, f in pg_shop.placed.items() if f)
        r = await c.get(f"{pg_shop.shop.orders.base}/api/projections/order_progress/{order}")
        assert r.status_code == 200, r.text
        # placed, reserved, payment failed, released, cancelled: every context's events arrived
        # (`last` is whichever came last: each event type is a consumer of its own, and two
        # consumers are not ordered with each other)
        assert r.json()["steps"] == 5


async def test_happy_path_and_compensation_on_sqlite(
    fresh_nats: NatsServer, tmp_path: Path, report: Report
) -> None:
    databases = {d: f"sqlite+aiosqlite:///{tmp_path / d.lower()}.db" for d in DEPLOYABLES}
    top = Topology(_topology(tmp_path, databases, fresh_nats.url), fresh_nats)
    try:
        await top.shop.start()
        async with httpx.AsyncClient(timeout=30) as c:
            await top.place(c, [False, True, False])
        assert await _settled_books(top, report, "shop on NATS, 3 SQLite files") == []
    finally:
        top.shop.stop()


async def _released(c: httpx.AsyncClient, shop: Shop, order: str) -> bool:
    items = (await c.get(f"{shop.inventory.base}/api/reservations")).json()["items"]
    return any(r["order"] == order and r["released"] for r in items)


async def test_payment_deadline_with_payment_down(
    pg_cluster: Cluster, fresh_nats: NatsServer, tmp_path: Path, report: Report
) -> None:
    """No cross-process clock exists, so the model is the shop's with the payment deadline of 30m
    shortened to 3s (shop_model), and Payment gives no answer because it is down: not started
    until the deadline has passed and Inventory has released the reservation."""
    databases = await asyncio.to_thread(_databases, pg_cluster)
    shop = _topology(tmp_path, databases, fresh_nats.url, deadline="3s")
    try:
        await shop.start(shop.orders, shop.inventory)
        async with httpx.AsyncClient(timeout=30) as c:
            order = await place(c, shop, True)
            released = partial(_released, c, shop, order)
            await until(released, timeout=30, what="the released order", interval=0.3)
            path = f"/api/workflows/payment_deadline/instances/{order}"
            instance = (await c.get(f"{shop.orders.base}{path}")).json()
            assert (instance["ended"], instance["timeouts"]) == (True, [])
            assert (await statuses(c, shop))[order] == "Pending"  # Payment's answer cancels it
            await shop.start(shop.payment)
            placed = {order: True}
            waited = await wait_terminal(c, shop, placed, 30)
        b = await books(shop, placed, settle_timeout=30)
        title = f"payment deadline 3s, Payment down (Cancelled {waited:.1f}s after it started)"
        report(b.table(title))
    finally:
        shop.stop()
    assert (b.status[order], b.released, b.charged_ok) == ("Cancelled", {order}, set())
    assert (b.reservations[order], b.charges[order]) == (1, 1)
    # The timeout's step is applied once, beyond the events of a failing order. Payment's late
    # answer (it charged, and failed, when it came back) asks Inventory to release a reservation
    # the timeout already released: the model refuses (`when !released`) and, after the
    # channel's 5 attempts, it is Inventory's one dead letter. The shop has no step for a payment
    # answer after the deadline; this is what it does without one.
    assert b.inbox_off() == {
        "Inventory.reserveStock.on(Orders.PaymentTimedOut)": (1, 0),
        "Inventory.reserveStock.on(Payment.PaymentFailed)": (0, 1),
    }
    assert b.dead_letters == {"Orders": 0, "Inventory": 1, "Payment": 0}
    assert all(c["pending"] == 0 for c in b.outbox.values()), b.outbox


async def test_kill_9_each_deployable_and_restart_nats_mid_flow(
    pg_shop: Topology, report: Report
) -> None:
    """Rounds of a burst of orders (a third failing) and, while their events are in flight, one
    fault: kill -9 of Orders, of Inventory, of Payment (each restarted at once on its port and
    database), the NATS server killed with SIGKILL, then stopped cleanly (each back after 1 s, on
    its file storage). No request is in flight at a kill: what is cut is the relays, the
    consumers and the broker, mid-flow."""
    shop, nats = pg_shop.shop, pg_shop.broker
    assert nats is not None
    faults: dict[str, Callable[[], Awaitable[None]]] = {
        "kill -9 Orders": lambda: shop.restart(shop.orders),
        "kill -9 Inventory": lambda: shop.restart(shop.inventory),
        "kill -9 Payment": lambda: shop.restart(shop.payment),
        "NATS SIGKILL": lambda: asyncio.to_thread(nats.restart, kill=True, down_for=1.0),
        "NATS stop": lambda: asyncio.to_thread(nats.restart, down_for=1.0),
    }
    before = len(pg_shop.placed)
    started = time.monotonic()
    lines = []
    async with httpx.AsyncClient(timeout=30) as c:
        for name, fault in faults.items():
            await pg_shop.place(c, list(mix(6)))
            await asyncio.sleep(0.2)  # the burst's events are being relayed and consumed
            done = await statuses(c, shop)
            in_flight = sum(1 for o, f in pg_shop.placed.items() if done[o] == "Pending")
            t = time.monotonic()
            await fault()
            lines.append(
                f"  {name}: {in_flight} orders in flight, back in {time.monotonic() - t:.1f}s"
            )
    problems = await _settled_books(
        pg_shop,
        report,
        f"faults on NATS: {len(faults)} faults, {len(pg_shop.placed) - before} orders in "
        f"{time.monotonic() - started:.1f}s\n" + "\n".join(lines),
        timeout=90,
    )
    assert problems == []


async def test_two_inventory_replicas_share_one_channel(pg_shop: Topology, report: Report) -> None:
    shop = pg_shop.shop
    second = Deployable(
        shop.inventory.model,
        shop.inventory.database_url,
        "Inventory",
        shop.inventory.broker,
        name="inventory-b",
        lease=shop.inventory.lease,
        log_dir=shop.inventory.log_path.parent,
        env=shop.inventory.env,
    )
    shop.replicas.append(second)
    await shop.start(second)
    first_before = shop.inventory.handled(RESERVE)
    async with httpx.AsyncClient(timeout=30) as c:
        for _ in range(4):
            await pg_shop.place(c, list(mix(6)))
            await asyncio.sleep(0.3)  # the scenario: bursts spread over time, not one batch
    problems = await _settled_books(pg_shop, report, "two Inventory replicas, one database")
    split = (shop.inventory.handled(RESERVE) - first_before, second.handled(RESERVE))
    report([f"  {RESERVE} applied by inventory / inventory-b: {split[0]} / {split[1]} of 24"])
    assert problems == []
    assert sum(split) == 24 and min(split) > 0, split


async def test_the_shop_on_redis_streams_with_a_consumer_killed(
    pg_cluster: Cluster, redis: RedisServer, tmp_path: Path, report: Report
) -> None:
    """The happy path and the compensation on Redis Streams (`--broker redis://…`), then a burst
    with Inventory, a consumer of Orders and Payment, killed with SIGKILL mid-flow and restarted."""
    databases = await asyncio.to_thread(_databases, pg_cluster)
    top = Topology(_topology(tmp_path, databases, redis.url))
    try:
        await top.shop.start()
        async with httpx.AsyncClient(timeout=30) as c:
            await top.place(c, [False, True, False, True])
            waited = await wait_terminal(c, top.shop, top.placed, 30)
            assert waited < 30, top.shop.inventory.log_tail()
            await top.place(c, list(mix(9)))
            await asyncio.sleep(0.2)  # the scenario: the burst is in flight when the kill comes
            await top.shop.restart(top.shop.inventory)
        problems = await _settled_books(
            top, report, "shop on Redis Streams, 3 PostgreSQL databases, kill -9 Inventory"
        )
    finally:
        top.shop.stop()
    assert problems == []
