"""Orders and Inventory as two services on two databases, connected by one broker: events cross
in both directions, each reaction is applied exactly once under crashes, failures, replicas and
a broker outage, and a service whose channel could never deliver does not start."""

from __future__ import annotations

import asyncio
import dataclasses
from functools import partial
from typing import Any
from uuid import uuid4

import pytest

from loom.runtime import StartupRefused, event_key
from loom.runtime.transports import Message
from loom.testing import ServiceClient, settle_all
from tests.scrape import sample, scrape
from tests.waiting import until

from .conftest import INVENTORY, ORDERS, Topology, facts

RESERVE = "Inventory.reserveStock.on(Orders.OrderPlaced)"
MARK = "Orders.onReserved.on(Inventory.StockReserved)"


async def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


async def stock(inventory: ServiceClient, sku: str) -> None:
    await ok(await inventory.post("/api/stocks", json={"sku": sku}), 201)


async def place(orders: ServiceClient, sku: str = "lamp", quantity: int = 1) -> str:
    body = {"sku": sku, "quantity": quantity}
    return str(await ok(await orders.post("/api/workflows/place_order", json=body)))


async def items(client: ServiceClient, path: str) -> list[dict[str, Any]]:
    page = await ok(await client.get(f"{path}?limit=500"))
    assert page["total"] == len(page["items"])
    return list(page["items"])


async def reservations_by_order(inventory: ServiceClient) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in await items(inventory, "/api/reservations"):
        counts[r["order"]] = counts.get(r["order"], 0) + 1
    return counts


async def pair(topology: Topology, urls: tuple[str, str]) -> tuple[ServiceClient, ServiceClient]:
    orders = await topology.start(ORDERS, urls[0])
    inventory = await topology.start(INVENTORY, urls[1])
    return orders, inventory


async def test_events_cross_both_ways_and_apply_once(
    topology: Topology, two_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, two_urls)
    await stock(inventory, "lamp")
    placed = [await place(orders) for _ in range(5)]
    await settle_all([orders, inventory])
    counts = await reservations_by_order(inventory)
    marked = {o: (await ok(await orders.get(f"/api/orders/{o}"))) for o in placed}
    print(
        f"reservations per order: {sorted(counts.values())}; "
        f"marks per order: {sorted(m['reservations'] for m in marked.values())}"
    )
    assert counts == dict.fromkeys(placed, 1)
    assert {o: (m["status"], m["reservations"]) for o, m in marked.items()} == dict.fromkeys(
        placed, ("Reserved", 1)
    )
    # each side applied what the other published; nothing is left in either outbox
    assert len(facts(caplog, "event_handled", handler=RESERVE)) == 5
    assert len(facts(caplog, "event_handled", handler=MARK)) == 5
    for client in (orders, inventory):
        assert await client.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}


async def test_a_relay_crash_after_publish_applies_once(
    topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, sqlite_urls)
    await stock(inventory, "lamp")
    orders.service.faults.crash_relay(after="publish")
    order = await place(orders)
    await orders.service.settle()  # publishes, then dies before marking the row
    assert facts(caplog, "relay_crashed", after="publish")
    await topology.stop(orders)
    orders = await topology.start(ORDERS, sqlite_urls[0])  # the restart claims it once its

    async def republished() -> bool:  # lease (0.5 s) has run out, and publishes it again
        await orders.service.settle()
        return len(facts(caplog, "event_published", event_type="Orders.OrderPlaced")) >= 2

    await until(republished, timeout=10, what="the restarted relay publishes the row again")
    await settle_all([orders, inventory])
    published = facts(caplog, "event_published", event_type="Orders.OrderPlaced")
    applied = await reservations_by_order(inventory)
    skipped = facts(caplog, "event_skipped_duplicate", handler=RESERVE)
    print(
        f"published {len(published)} times, applied {applied.get(order, 0)}, "
        f"skipped {len(skipped)} (the broker deduplicated the second publish)"
    )
    assert len(published) == 2
    assert applied == {order: 1}
    assert skipped == []  # one message on the broker: the consumer never saw a second
    assert (await ok(await orders.get(f"/api/orders/{order}")))["status"] == "Reserved"
    assert await orders.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}


async def test_a_consumer_crash_after_commit_applies_once(
    topology: Topology, two_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, two_urls)
    await stock(inventory, "lamp")
    inventory.service.faults.crash_consumer(after="commit")
    order = await place(orders)
    await orders.service.settle()
    # the reaction commits, then the consumer dies before its ack
    await until(lambda: facts(caplog, "consumer_crashed"), timeout=2, what="the consumer crash")
    assert facts(caplog, "consumer_crashed", after="commit")
    await topology.stop(inventory)
    inventory = await topology.start(INVENTORY, two_urls[1])
    # past ack_wait (0.3 s) the broker hands the message out again, and the inbox skips it (on
    # PostgreSQL the inbox row and the key's progress are one statement for a key's first event)
    skipped_again = partial(facts, caplog, "event_skipped_duplicate", handler=RESERVE)
    await until(skipped_again, timeout=10, what="the redelivery after ack_wait")
    await settle_all([orders, inventory])
    applied = await reservations_by_order(inventory)
    skipped = facts(caplog, "event_skipped_duplicate", handler=RESERVE)
    handled = facts(caplog, "event_handled", handler=RESERVE)
    print(
        f"handled {len(handled)}, skipped {len(skipped)} by the inbox, "
        f"applied {applied.get(order, 0)}"
    )
    assert applied == {order: 1}
    assert len(skipped) == 1 and skipped[0]["attempt"] == 2
    assert (await ok(await orders.get(f"/api/orders/{order}")))["reservations"] == 1


async def test_a_failing_reaction_is_dead_lettered_then_redriven_once(
    topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, sqlite_urls)
    order = await place(orders, "ghost")  # no stock for it: reserveStock fails every time
    await settle_all([orders, inventory])
    retries = facts(caplog, "retry_scheduled", event_type="Orders.OrderPlaced")
    dead = await ok(await inventory.get("/api/admin/dead-letters"))
    print(f"retries {len(retries)}, dead letters {dead['total']}")
    assert [r["attempt"] for r in retries] == [1, 2]
    assert dead["total"] == 1
    letter = dead["items"][0]
    assert letter["event_type"] == "Orders.OrderPlaced"
    assert letter["channel"] == "Orders.Placed"
    assert letter["attempts"] == 3
    assert letter["payload"]["order"] == order
    assert letter["last_error"].startswith(f"{RESERVE}: NotFound")
    assert await reservations_by_order(inventory) == {}
    # fixed: the sku is stocked; redriven: the local relay delivers it, never republishes it
    await stock(inventory, "ghost")
    r = await inventory.post(f"/api/admin/dead-letters/{letter['event_id']}/redrive")
    assert r.status_code == 204, r.text
    await settle_all([orders, inventory])
    applied = await reservations_by_order(inventory)
    print(f"after the redrive: applied {applied.get(order, 0)}")
    assert applied == {order: 1}
    assert (await ok(await orders.get(f"/api/orders/{order}")))["status"] == "Reserved"
    assert facts(caplog, "event_published", event_id=letter["event_id"]) == [
        facts(caplog, "event_published", event_type="Orders.OrderPlaced")[0]
    ]  # the one publish is Orders'
    assert await inventory.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}


async def test_events_of_one_key_apply_in_order(
    main: Any, topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    failures = {"left": 2}
    target: dict[str, str] = {}
    # the first failure waits until every note is posted, so the other keys' notes are there to
    # go on while this key's first note is held (else a quick retry could beat the posting)
    posted = asyncio.Event()

    def subscribe(service: Any) -> None:
        # Inventory's own reactions, with keepNotes failing twice for one order's first note
        reactions = main.inventory_reactions
        inner = reactions.keep_notes_on_order_noted
        noted = main.orders_domain.OrderNoted

        async def flaky(e: Any) -> None:
            if str(e.order) == target.get("order") and e.seq == 1 and failures["left"]:
                failures["left"] -= 1
                await posted.wait()
                raise RuntimeError("injected: not yet")
            await inner(service, e)

        service.events.subscribe(
            main.orders_domain.OrderPlaced,
            partial(reactions.reserve_stock_on_order_placed, service),
            name=RESERVE,
        )
        service.events.subscribe(noted, flaky, name="Inventory.keepNotes.on(Orders.OrderNoted)")

    orders = await topology.start(ORDERS, sqlite_urls[0])
    inventory = await topology.start(INVENTORY, sqlite_urls[1], subscribe=subscribe)
    await stock(inventory, "lamp")
    keys = [await place(orders) for _ in range(3)]
    target["order"] = keys[0]
    for seq in range(1, 11):
        for key in keys:
            await ok(await orders.post(f"/api/orders/{key}/note", json={"seq": seq}), 204)
    posted.set()
    await settle_all([orders, inventory])
    notes = sorted(await items(inventory, "/api/notes"), key=lambda n: n["id"])  # UUIDv7: order
    applied = {key: [n["seq"] for n in notes if n["order"] == key] for key in keys}
    print(f"notes applied per key, in application order: {applied}; injected failures: 2")
    assert applied == {key: list(range(1, 11)) for key in keys}
    assert len(facts(caplog, "retry_scheduled", event_type="Orders.OrderNoted")) == 2
    # the failing key waited; the other keys went on meanwhile
    first_other = min(i for i, n in enumerate(notes) if n["order"] != keys[0])
    first_target = min(i for i, n in enumerate(notes) if n["order"] == keys[0])
    assert first_other < first_target


async def test_two_consumer_replicas_apply_each_event_once(
    topology: Topology, sqlite_urls: tuple[str, str]
) -> None:
    orders = await topology.start(ORDERS, sqlite_urls[0])
    replicas = [await topology.start(INVENTORY, sqlite_urls[1]) for _ in range(2)]
    await stock(replicas[0], "lamp")
    placed = [await place(orders) for _ in range(20)]
    await settle_all([orders, *replicas])
    applied = await reservations_by_order(replicas[1])
    handled = [r.service.consumers.handled for r in replicas]
    print(
        f"messages handled per replica: {handled}; reservations per order: "
        f"{sorted(set(applied.values()))} for {len(applied)} orders"
    )
    assert applied == dict.fromkeys(placed, 1)
    assert sum(handled) == 20
    for o in placed:
        assert (await ok(await orders.get(f"/api/orders/{o}")))["reservations"] == 1


async def test_a_broker_outage_loses_nothing(
    topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, sqlite_urls)
    await stock(inventory, "lamp")
    await topology.harness.down()
    placed = [await place(orders) for _ in range(5)]  # the HTTP service keeps serving
    await orders.service.settle()
    loops = {loop.spec.name for c in (orders, inventory) for loop in c.service.consumers.loops}

    def all_tried() -> bool:  # the relay and every consumer loop have met the outage
        failed = {f["handler"] for f in facts(caplog, "consumer_error")}
        return bool(facts(caplog, "publish_failed")) and failed >= loops

    await until(all_tried, timeout=10, what="every side meets the outage")
    counts = await orders.service.outbox.counts()
    print(
        f"while down: outbox {counts}, publish failures "
        f"{len(facts(caplog, 'publish_failed'))}, consumer errors "
        f"{len(facts(caplog, 'consumer_error'))}"
    )
    assert counts["pending"] == 5  # kept by the producer's outbox, no attempt counted
    assert facts(caplog, "publish_failed")
    assert facts(caplog, "consumer_error", handler=RESERVE)
    await topology.harness.up()

    async def drained() -> bool:  # the failed publishes are due again after their backoff
        await settle_all([orders, inventory])
        return (await orders.service.outbox.counts())["pending"] == 0

    await until(drained, timeout=20, what="the outbox drains once the broker is back")
    applied = await reservations_by_order(inventory)
    print(f"after: reservations per order {sorted(applied.values())}")
    assert applied == dict.fromkeys(placed, 1)
    for o in placed:
        assert (await ok(await orders.get(f"/api/orders/{o}")))["status"] == "Reserved"
    assert await orders.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}


async def test_a_service_whose_channel_cannot_deliver_does_not_start(
    topology: Topology, sqlite_urls: tuple[str, str]
) -> None:
    with pytest.raises(StartupRefused) as refused:
        await topology.start(ORDERS, sqlite_urls[0], brokers={})
    message = str(refused.value)
    assert "channels Orders.Placed, Inventory.Reserved must carry events between" in message
    assert RESERVE in message and "--broker URL or LOOM_BROKER=URL" in message
    assert len(refused.value.reasons) == 1  # one missing broker: one reason, `loom run`'s one line
    # a channel on a named source needs that broker, not the default one
    named = [dataclasses.replace(c, source="bus") for c in topology.channels]
    with pytest.raises(StartupRefused) as refused:
        await topology.start(INVENTORY, sqlite_urls[1], channels=named)
    assert "--broker bus=URL or LOOM_BROKER_BUS=URL" in str(refused.value)
    # two sources without their brokers: two reasons (`loom run` prints two `error:` lines)
    mixed = [
        dataclasses.replace(c, source="bus") if c.name == "Orders.Placed" else c
        for c in topology.channels
    ]
    with pytest.raises(StartupRefused) as refused:
        await topology.start(INVENTORY, sqlite_urls[1], channels=mixed, brokers={})
    first, second = refused.value.reasons
    assert first.startswith("channel Orders.Placed must carry events between deployables")
    assert first.endswith("--broker bus=URL or LOOM_BROKER_BUS=URL"), first
    assert second.startswith("channel Inventory.Reserved must carry events between deployables")
    assert second.endswith("--broker URL or LOOM_BROKER=URL"), second
    # one deployable holding every context needs no broker at all
    both = await topology.start(("Orders", "Inventory"), sqlite_urls[0], brokers={})
    await stock(both, "lamp")
    order = await place(both)
    await both.service.settle()
    assert (await ok(await both.get(f"/api/orders/{order}")))["status"] == "Reserved"


async def test_two_consumers_dead_lettering_one_event_share_its_dead_letter(
    main: Any, topology: Topology, sqlite_urls: tuple[str, str]
) -> None:
    audit = "Inventory.audit.on(Orders.OrderPlaced)"

    def subscribe(service: Any) -> None:
        main.inventory_reactions.subscribe(service)

        async def refuse(e: Any) -> None:
            raise RuntimeError(f"cannot audit {e.sku}")

        service.events.subscribe(main.orders_domain.OrderPlaced, refuse, name=audit)

    orders = await topology.start(ORDERS, sqlite_urls[0])
    inventory = await topology.start(INVENTORY, sqlite_urls[1], subscribe=subscribe)
    order = await place(orders, "ghost")
    await settle_all([orders, inventory])
    dead = await ok(await inventory.get("/api/admin/dead-letters"))
    errors = dead["items"][0]["last_error"] if dead["items"] else ""
    print(f"dead letters {dead['total']}: {errors}")
    assert dead["total"] == 1 and dead["items"][0]["payload"]["order"] == order
    assert f"{RESERVE}: NotFound" in errors
    assert f"{audit}: RuntimeError: cannot audit ghost" in errors


def test_an_event_is_keyed_by_its_first_id_field(main: Any) -> None:
    placed = main.orders_domain.OrderPlaced(order=uuid4(), sku="lamp", quantity=1)
    assert event_key(placed) == str(placed.order)
    reserved = main.inventory_domain.StockReserved(order=uuid4(), reservation=uuid4())
    assert event_key(reserved) == str(reserved.order)


async def test_a_broker_unreachable_at_start_is_retried_not_refused(
    topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    await topology.harness.down()
    orders, inventory = await pair(topology, sqlite_urls)  # both start, and serve
    assert facts(caplog, "broker_unavailable", broker="default")
    await stock(inventory, "lamp")
    order = await place(orders)
    await topology.harness.up()
    await settle_all([orders, inventory])
    assert await reservations_by_order(inventory) == {order: 1}
    assert (await ok(await orders.get(f"/api/orders/{order}")))["status"] == "Reserved"


async def test_an_undecodable_message_is_dead_lettered(
    topology: Topology, sqlite_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    orders, inventory = await pair(topology, sqlite_urls)
    stranger = topology.harness.transport()  # a publisher that is no Loom relay
    await stranger.connect()
    event_id = str(uuid4())
    at = "2026-12-01T00:00:00+00:00"
    await stranger.publish(
        Message(event_id, "Orders.OrderPlaced", "Orders.Placed", "not json", occurred_at=at)
    )
    await settle_all([orders, inventory])
    undeliverable = facts(caplog, "event_undeliverable", event_id=event_id)
    dead = await ok(await inventory.get("/api/admin/dead-letters"))
    print(f"undeliverable {len(undeliverable)} times, dead letters {dead['total']}")
    assert [u["attempt"] for u in undeliverable] == [1, 2, 3]
    assert dead["total"] == 1
    letter = dead["items"][0]
    assert letter["event_id"] == event_id and letter["payload"] == {"_unparsed": "not json"}
    assert letter["last_error"].startswith(f"{RESERVE}: the payload does not decode as OrderPlaced")


async def test_a_message_without_loom_metadata_is_dead_lettered_and_consuming_goes_on(
    topology: Topology, sqlite_urls: tuple[str, str]
) -> None:
    """A message on the channel that no Loom relay wrote (no `Loom-Event-Id`): the consumer
    dead-letters it once, acks it, and applies the events after it."""
    orders, inventory = await pair(topology, sqlite_urls)
    await stock(inventory, "lamp")
    await topology.harness.backend.inject("Orders.Placed", "Orders.OrderPlaced", {})
    await topology.harness.backend.inject(
        "Orders.Placed", "Orders.OrderPlaced", {"Loom-Event-Type": "Orders.OrderPlaced"}
    )
    placed = [await place(orders) for _ in range(3)]
    await settle_all([orders, inventory])
    dead = await ok(await inventory.get("/api/admin/dead-letters"))
    applied = await reservations_by_order(inventory)
    print(f"malformed injected 2, dead letters {dead['total']}, orders applied {len(applied)}/3")
    assert applied == dict.fromkeys(placed, 1)
    # one dead letter per consumer that was handed one: the typed one reaches reserveStock only,
    # the one with no type at all may reach keepNotes too (the in-memory broker hands it to both)
    assert 2 <= dead["total"] <= 3
    for letter in dead["items"]:
        assert "no Loom-Event-Id header" in letter["last_error"], letter["last_error"]
    # and counted as dead-lettered, though no reactor ran (docs/observability.md#metrics)
    counted = sample(
        await scrape(inventory),
        "loom_deliveries_total",
        channel="Orders.Placed",
        reactor=RESERVE,
        outcome="dead_lettered",
    )
    assert counted == 2


async def test_one_service_with_a_broker_and_no_remote_reader_publishes_nothing(
    topology: Topology, two_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    """Orders and Inventory in one service, given a broker: every reader of the two `work`
    channels runs beside its producer and reads the outbox, so no stream is needed and nothing
    is published (it used to publish to a stream it never created, failing for ever, the rows
    left pending)."""
    both = ORDERS + INVENTORY
    channels = [dataclasses.replace(c, consumers=()) for c in topology.channels]
    assert {c.retention for c in channels} == {"work"}
    shop = await topology.start(both, two_urls[0], channels=channels)
    await stock(shop, "lamp")
    placed = [await place(shop) for _ in range(3)]
    await settle_all([shop])
    marked = [(await ok(await shop.get(f"/api/orders/{o}")))["status"] for o in placed]
    failed = facts(caplog, "publish_failed")
    published = facts(caplog, "event_published")
    print(f"orders: {marked}; published {len(published)}, publish_failed {len(failed)}")
    assert marked == ["Reserved"] * 3
    assert (published, failed) == ([], [])
    assert await shop.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}
