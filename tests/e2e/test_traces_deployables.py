"""The trace proof through the real path (issue 27, §1 "Proof"; docs/observability.md#traces): the
shop of examples/shop as three `loom run --deployable` processes (Orders, Inventory, Payment),
each on its own database, over a real NATS JetStream or Redis Streams server, every process
exporting its spans over OTLP/HTTP (LOOM_OTEL_ENDPOINT) to a receiver the test runs
(tests/otlp.py), which decodes the protobuf as a collector would.

- One `POST /api/workflows/place_order` is ONE trace: the HTTP span at its root, the `send` and
  `process` spans of every hop between the deployables, every reactor of the three contexts and,
  for a failing payment, the compensation; no orphan span; each span carries `loom.deployable`,
  the same as its resource's `service.name`.
- The trace is complete by the model: for each event of the order, every consumer the served
  AsyncAPI documents (`x-loom-consumers`) subscribe to it ran in a span of that trace, under a
  `process` span of that event.
- A consumer killed with SIGKILL while it holds a delivered, unacked message: the message comes
  again after the restart, and its `process` span (with a `redelivered` event) joins the same
  trace.
- A timeout armed by Orders' reaction fires in a new trace linked to the span that armed it, and
  its consequences cross to Inventory and back inside that new trace.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints
import httpx
import pytest

from tests.brokers import NatsServer, RedisServer, running_nats, running_redis
from tests.chaos import conftest as chaos
from tests.chaos.conftest import Report
from tests.chaos.deployables import (
    DEPLOYABLES,
    EVENTS,
    Deployable,
    Shop,
    broker_backlog,
    place,
    shop_model,
    wait_terminal,
)
from tests.conftest import _broker, create_pg_database
from tests.otlp import Receiver, Span, missing_reactions, receiving, subscribed_in
from tests.pgcluster import Cluster
from tests.waiting import until

report = chaos.report  # the fixture that prints past the capture
HTTP_ROOT = "POST /api/workflows/place_order"
# the compensation of a failed payment, one reactor in each context
COMPENSATION = (
    "Inventory.reserveStock.on(Payment.PaymentFailed)",
    "Payment.takePayment.on(Inventory.ReservationReleased)",
    "Orders.settleOrder.on(Payment.OrderCancelled)",
)
# spans are exported in batches: a short delay, so a test waits for them less
EXPORT_DELAY_MS = "100"
TRACE_TIMEOUT = 60.0


@pytest.fixture(params=["nats", "redis"])
def broker(request: pytest.FixtureRequest) -> Iterator[NatsServer | RedisServer]:
    """A broker of this test's own: a shop's streams from another test are not in its way."""
    if request.param == "nats":
        yield from _broker(running_nats, "NATS")
    else:
        yield from _broker(running_redis, "Redis")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """A database per deployable, on the engine of the parameter."""
    if request.param == "sqlite":
        return {d: f"sqlite+aiosqlite:///{tmp_path / d.lower()}.db" for d in DEPLOYABLES}
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    return {d: cluster.url(create_pg_database(cluster)) for d in DEPLOYABLES}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as r:
        yield r


def traced_shop(
    folder: Path,
    databases: dict[str, str],
    broker: str,
    receiver: Receiver,
    deadline: str | None = None,
) -> Shop:
    """The shop, each deployable exporting to `receiver` (`deadline`: see `shop_model`)."""
    env = {"LOOM_OTEL_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": EXPORT_DELAY_MS}
    model = shop_model(folder / "model", deadline=deadline)
    return Shop.create(model, databases, broker, folder, env=env)


async def subscriptions(
    client: httpx.AsyncClient, shop: Shop, *servers: Deployable
) -> dict[str, set[str]]:
    """The model's subscriptions, from the served AsyncAPI document of each of `servers` (by
    default every deployable of the shop)."""
    documents = []
    for server in servers or shop.main:
        r = await client.get(f"{server.base}/asyncapi.json")
        assert r.status_code == 200, r.text
        documents.append(r.json())
    return subscribed_in(documents)


def new_root(receiver: Receiver, known: set[str]) -> Span | None:
    """The one HTTP root span received that is not among `known` (span ids)."""
    roots = [s for s in receiver.spans if s.name == HTTP_ROOT and s.span_id not in known]
    assert len(roots) <= 1, roots
    return roots[0] if roots else None


async def placed_trace(
    client: httpx.AsyncClient,
    shop: Shop,
    receiver: Receiver,
    subscribed: dict[str, set[str]],
    fail: bool,
) -> tuple[str, list[Span]]:
    """Place one order and answer its id and its trace, once the order is terminal and the trace
    holds every reaction the model owes its events."""
    known = {s.span_id for s in receiver.spans if s.name == HTTP_ROOT}
    order = await place(client, shop, fail)
    return order, await order_trace(client, shop, receiver, subscribed, (order, fail), known)


async def order_trace(
    client: httpx.AsyncClient,
    shop: Shop,
    receiver: Receiver,
    subscribed: dict[str, set[str]],
    placed: tuple[str, bool],
    known: set[str],
) -> list[Span]:
    """The trace of the order `placed` (id, failPayment), whose HTTP span is the one not in
    `known`, once the order is terminal and the trace holds every reaction the model owes."""
    order, fail = placed
    waited = await wait_terminal(client, shop, {order: fail}, TRACE_TIMEOUT)
    assert waited < TRACE_TIMEOUT, shop.inventory.log_tail()
    root = await receiver.until(
        lambda _: new_root(receiver, known), timeout=TRACE_TIMEOUT, what="the order's HTTP span"
    )

    def complete(_: list[Span]) -> list[Span] | None:
        trace = receiver.trace_of(root)
        return None if missing_reactions(trace, EVENTS[fail], subscribed) else trace

    try:
        return await receiver.until(complete, timeout=TRACE_TIMEOUT, what="a complete trace")
    except AssertionError:
        print(receiver.tree(root.trace_id))
        missing = missing_reactions(receiver.trace_of(root), EVENTS[fail], subscribed)
        raise AssertionError(f"reactions missing from the trace: {sorted(missing)}") from None


def assert_one_clean_trace(receiver: Receiver, trace: list[Span]) -> None:
    """One root (the HTTP span), no orphan, every span named after its deployable, and the
    three deployables' spans all there."""
    print(receiver.tree(trace[0].trace_id))
    roots = [s for s in trace if s.parent_id is None]
    assert [r.name for r in roots] == [HTTP_ROOT]
    assert roots[0].kind == "SERVER" and roots[0].service == "Orders"
    assert [s.name for s in receiver.orphans(trace)] == []
    assert {s.service for s in trace} == set(DEPLOYABLES)
    unnamed = [
        (s.name, s.service) for s in trace if s.attributes.get("loom.deployable") != s.service
    ]
    assert unnamed == []
    # between deployables the events ride the broker: a send span, its process span a child
    by_id = {s.span_id: s for s in trace}
    crossing = [
        s
        for s in trace
        if s.kind == "CONSUMER"
        and (parent := by_id.get(s.parent_id or "")) is not None
        and parent.kind == "PRODUCER"
    ]
    assert crossing, "no process span is the child of a send span"
    assert all(by_id[s.parent_id or ""].service != s.service for s in crossing)


async def test_one_post_is_one_trace_across_three_deployables(
    broker: NatsServer | RedisServer,
    databases: dict[str, str],
    receiver: Receiver,
    tmp_path: Path,
    report: Report,
) -> None:
    shop = traced_shop(tmp_path, databases, broker.url, receiver)
    try:
        await shop.start()
        async with httpx.AsyncClient(timeout=30) as c:
            subscribed = await subscriptions(c, shop)
            _, happy = await placed_trace(c, shop, receiver, subscribed, False)
            _, failed = await placed_trace(c, shop, receiver, subscribed, True)
    finally:
        shop.stop()
    assert_one_clean_trace(receiver, happy)
    assert_one_clean_trace(receiver, failed)
    # complete by the model: the events the trace carried are the order's, and every consumer
    # the deployables' AsyncAPI documents subscribe to one of them ran under its process span
    for trace, fail in ((happy, False), (failed, True)):
        carried = {s.attributes["loom.event"] for s in trace if s.kind in ("PRODUCER", "CONSUMER")}
        assert carried == set(EVENTS[fail])
        assert missing_reactions(trace, tuple(carried), subscribed) == set()
    pairs = sum(len(subscribed[e]) for e in {*EVENTS[False], *EVENTS[True]})
    reactors = {s.attributes.get("loom.reactor") for s in failed}
    assert set(COMPENSATION) <= reactors
    assert not set(COMPENSATION) & {s.attributes.get("loom.reactor") for s in happy}
    # every other trace is one of the test's reads (GET /api/orders while it waits, the AsyncAPI
    # documents): nothing of the orders' flows escaped their two traces
    traces = receiver.traces()
    others = {
        t: spans for t, spans in traces.items() if t not in (happy[0].trace_id, failed[0].trace_id)
    }
    roots = {s.name for spans in others.values() for s in spans if s.parent_id is None}
    assert {r.split()[0] for r in roots} <= {"GET"}, roots
    assert not [s for spans in others.values() for s in spans if s.kind in ("PRODUCER", "CONSUMER")]
    report(
        [
            f"over {broker.name} on {databases['Orders'].split('+')[0]}: {len(traces)} traces, "
            f"spans {len(happy)} (paid) / {len(failed)} (cancelled), "
            f"orphans {len(receiver.orphans())}, {pairs} (event, consumer) pairs of the model "
            "each ran in its order's trace"
        ]
    )


async def held_unacked(url: str) -> dict[str, tuple[int, int]]:
    """Inventory's consumer of OrderPlaced, when it holds a delivered, unacked message (its name
    on the broker: `…Inventory.reserveStock.on(Orders.OrderPlaced)`, NATS spelling `.` as `-`)."""
    return {
        name: counts
        for name, counts in (await broker_backlog(url)).items()
        if counts[1] > 0 and "reserveStock" in name and "OrderPlaced" in name
    }


@pytest.mark.postgres
async def test_a_message_redelivered_after_kill_9_joins_the_trace(
    broker: NatsServer | RedisServer,
    pg_cluster: Cluster,
    receiver: Receiver,
    tmp_path: Path,
    report: Report,
) -> None:
    """Inventory's inbox locked by the test (ACCESS EXCLUSIVE, in Inventory's own database), so
    Inventory takes the order's OrderPlaced and waits on the lock in its `process` span, the
    message delivered and unacked. Then SIGKILL, the lock released, a restart: the broker delivers
    the message again after the redelivery wait, and its `process` span, with a `redelivered`
    event, is in the order's trace, a child of Orders' `send` span."""
    names = await asyncio.to_thread(
        lambda: {d: create_pg_database(pg_cluster) for d in DEPLOYABLES}
    )
    databases = {d: pg_cluster.url(name) for d, name in names.items()}
    shop = traced_shop(tmp_path, databases, broker.url, receiver)
    inventory: Deployable = shop.inventory
    try:
        await shop.start()
        async with httpx.AsyncClient(timeout=30) as c:
            subscribed = await subscriptions(c, shop)
            await placed_trace(c, shop, receiver, subscribed, False)  # every consumer is running
            known = {s.span_id for s in receiver.spans if s.name == HTTP_ROOT}
            lock = await asyncpg.connect(pg_cluster.dsn(names["Inventory"]))
            try:
                async with lock.transaction():
                    await lock.execute("LOCK TABLE __loom_inbox IN ACCESS EXCLUSIVE MODE")
                    order = await place(c, shop, False)
                    held = await until(
                        lambda: held_unacked(broker.url),
                        timeout=TRACE_TIMEOUT,
                        what="OrderPlaced delivered to Inventory and not acked",
                    )
                    inventory.kill()
            finally:
                await lock.close()
            inventory.start()
            await inventory.wait_ready()
            trace = await order_trace(c, shop, receiver, subscribed, (order, False), known)
    finally:
        shop.stop()
    print(receiver.tree(trace[0].trace_id))
    redelivered = [s for s in receiver.spans if "redelivered" in s.event_names()]
    report(
        [
            f"kill -9 Inventory over {broker.name} holding {sorted(held)}: "
            f"{len(receiver.traces())} traces, {len(receiver.spans)} spans, "
            f"{len(receiver.orphans())} orphans, {len(redelivered)} redelivered",
        ]
    )
    assert [s.name for s in receiver.orphans()] == []
    [again] = [s for s in redelivered if s.trace_id == trace[0].trace_id]
    assert (again.name, again.kind, again.service) == (
        "process Orders.Fulfilment",
        "CONSUMER",
        "Inventory",
    )
    [event] = [e for e in again.events if e.name == "redelivered"]
    assert event.attributes["messaging.delivery.attempt"] >= 2
    parent = next(s for s in trace if s.span_id == again.parent_id)
    assert (parent.name, parent.kind, parent.service) == (
        "send Orders.Fulfilment",
        "PRODUCER",
        "Orders",
    )


@pytest.fixture
def nats() -> Iterator[NatsServer]:
    yield from _broker(running_nats, "NATS")


async def test_a_timeout_and_a_redrive_start_traces_linked_to_the_order_across_deployables(
    nats: NatsServer, databases: dict[str, str], receiver: Receiver, tmp_path: Path
) -> None:
    """The payment deadline shortened to 2s and Payment not started: the deadline, armed by
    Orders' reaction to OrderPlaced, fires in a new trace linked to the span that armed it
    (docs/observability.md#traces: a trace of minutes or days is unreadable, a link is followed
    in one click), and its own consequences cross to Inventory and back in that new trace. Then
    Payment starts: its late answer to the order is in the order's trace, where Inventory's
    refusals of it are `retry_scheduled` events of one delivery's span, and its dead letter the
    last; its answer to the release cancels the order in the timeout's trace. The dead letter
    redriven is delivered in a new trace linked to Payment's `send` span, in the order's."""
    shop = traced_shop(tmp_path, databases, nats.url, receiver, deadline="2s")
    up = (shop.orders, shop.inventory)
    try:
        await shop.start(*up)
        async with httpx.AsyncClient(timeout=30) as c:
            subscribed = await subscriptions(c, shop, *up)
            await place(c, shop, True)
            fired = await receiver.until(
                lambda spans: next((s for s in spans if s.name.startswith("timeout ")), None),
                timeout=TRACE_TIMEOUT,
                what="the payment deadline's timeout span",
            )
            consequences = ("Orders.PaymentTimedOut", "Inventory.ReservationReleased")

            def complete(_: list[Span]) -> list[Span] | None:
                trace = receiver.trace_of(fired)
                return None if missing_reactions(trace, consequences, subscribed) else trace

            after = await receiver.until(complete, timeout=TRACE_TIMEOUT, what="its reactions")
            # Payment back: its late answer to the order (PaymentFailed) asks Inventory to release
            # what the timeout released: refused each time, then dead-lettered
            await shop.start(shop.payment)
            dead = await receiver.until(
                lambda spans: next((s for s in spans if "dead_lettered" in s.event_names()), None),
                timeout=TRACE_TIMEOUT,
                what="Inventory's dead letter",
            )
            cancelled = await receiver.until(
                lambda _: [
                    s for s in receiver.trace_of(fired) if s.name.endswith("OrderCancelled)")
                ],
                timeout=TRACE_TIMEOUT,
                what="the order cancelled in the timeout's trace",
            )
            # the dead letter redriven (the admin route): a delivery in a trace of its own,
            # linked to the one that raised it
            listed = await c.get(f"{shop.inventory.base}/api/admin/dead-letters")
            [letter] = listed.json()["items"]
            r = await c.post(
                f"{shop.inventory.base}/api/admin/dead-letters/{letter['event_id']}/redrive"
            )
            assert r.status_code == 204, r.text
            redriven = await receiver.until(
                lambda spans: next(
                    (s for s in spans if s.links and s.name.startswith("process")), None
                ),
                timeout=TRACE_TIMEOUT,
                what="the redriven delivery's span",
            )
    finally:
        shop.stop()
    [order] = [s for s in receiver.spans if s.name == HTTP_ROOT]
    print(receiver.tree(order.trace_id))
    print(receiver.tree(fired.trace_id))
    assert (fired.name, fired.service, fired.parent_id) == (
        "timeout Orders.PaymentDeadline.payment",
        "Orders",
        None,
    )
    assert fired.trace_id != order.trace_id
    [(trace_id, span_id)] = fired.links
    armed = next(s for s in receiver.spans if s.span_id == span_id)
    assert trace_id == order.trace_id == armed.trace_id
    # armed in the unit of work of Orders' reaction that started the deadline
    by_id = {s.span_id: s for s in receiver.trace_of(order)}
    assert by_id[armed.parent_id or ""].name == "Orders.PaymentDeadline.create(OrderPlaced)"
    assert {s.service for s in after} == {"Orders", "Inventory"}
    assert "Inventory.reserveStock.on(Orders.PaymentTimedOut)" in {
        s.attributes.get("loom.reactor") for s in after
    }
    assert receiver.orphans() == []
    # the retries and the dead letter are events of the one delivery's span, in the order's trace
    assert (dead.name, dead.service, dead.trace_id) == (
        "process Payment.Payments",
        "Inventory",
        order.trace_id,
    )
    attempts = [e.attributes["messaging.delivery.attempt"] for e in dead.events]
    assert dead.event_names() == ["retry_scheduled"] * 4 + ["dead_lettered"]
    assert attempts == [1, 2, 3, 4, 5]
    assert {s.service for s in cancelled} == {"Orders"}
    assert (redriven.name, redriven.service, redriven.parent_id) == (
        "process Payment.Payments",
        "Inventory",
        None,
    )
    print(receiver.tree(redriven.trace_id))
    assert redriven.links == ((order.trace_id, dead.parent_id),)  # Payment's send span
    assert receiver.orphans() == []
