"""The transport contract (src/loom/runtime/messaging/transports/base.py), the same tests against every
transport: the in-memory broker, NATS JetStream and Redis Streams on real servers."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter

import pytest
import redis.asyncio as aioredis

from loom.model import messaging as wire
from loom.runtime.transports import (
    ConsumerSpec,
    MalformedMessage,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)
from tests.runtime.transports.conftest import (
    ACK_WAIT,
    REQUEST_TIMEOUT,
    Backend,
    RedisBackend,
    eventually,
)

CHANNEL = "Orders.Fulfilment"
PLACED = "Orders.OrderPlaced"
CANCELLED = "Orders.OrderCancelled"
RESERVE = ConsumerSpec("Inventory.reserveStock.on(Orders.OrderPlaced)", CHANNEL, (PLACED,))
AUDIT = ConsumerSpec("Audit.record.on(Orders.OrderPlaced)", CHANNEL, (PLACED, CANCELLED))


def message(n: int, event_type: str = PLACED) -> Message:
    return Message(
        event_id=f"evt-{n}",
        event_type=event_type,
        channel=CHANNEL,
        payload=f'{{"n": {n}}}',
        key=f"order-{n % 7}",
        correlation_id=f"corr-{n}",
        causation_id=f"cause-{n}",
        occurred_at="2026-12-01T10:00:00+00:00",
        model_revision="r1",
        tenant="acme" if n % 2 else None,  # a tenanted context's event, and an untenanted one's
        # the per-key counts a Loom producer sends (and a message from before them, without)
        key_counts=f"{event_type}={n},Orders.OrderNoted=2" if n % 3 else None,
    )


async def drain(
    transport: Transport, consumer: ConsumerSpec, *, want: int, within: float = 10.0
) -> list[Received]:
    """Fetch until `want` messages came (or `within` seconds passed), acking none."""
    got: list[Received] = []
    deadline = time.monotonic() + within
    while len(got) < want and time.monotonic() < deadline:
        got += await transport.fetch(consumer, batch=want - len(got), timeout=0.5)
    return got


async def settled(transport: Transport, consumer: ConsumerSpec, seconds: float) -> list[Received]:
    """Everything fetched for `seconds` (acking it), to show that nothing (more) comes."""
    got: list[Received] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        fetched = await transport.fetch(consumer, batch=64, timeout=min(left, 0.25))
        for received in fetched:
            await received.ack()
        got += fetched
    return got


def ids(received: list[Received]) -> list[str]:
    return [r.message.event_id for r in received]


async def test_publish_fetch_ack(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    await transport.publish(message(1))
    [received] = await drain(transport, RESERVE, want=1)
    assert received.message == message(1)  # payload and every header back as published
    assert received.delivered == 1
    await received.ack()
    assert await settled(transport, RESERVE, ACK_WAIT * 1.2) == []


async def test_pending_counts_what_a_consumer_has_not_acked_yet(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE, AUDIT)))
    assert (await transport.pending(RESERVE), await transport.pending(AUDIT)) == (0, 0)
    for n in range(1, 4):
        await transport.publish(message(n))
    await transport.publish(message(4, CANCELLED))  # only AUDIT's
    assert await transport.pending(AUDIT) == 4  # nobody fetched: the consumer is down
    # a consumer that skips other types unread may count them until it reads past them (Redis:
    # a group reads every type of its channel): one more, at most
    skipped = int(await transport.pending(RESERVE) == 4)
    assert await transport.pending(RESERVE) == 3 + skipped
    got = await drain(transport, RESERVE, want=3)
    assert await transport.pending(RESERVE) == 3 + skipped  # fetched, not acked: still owed
    for received in got[:2]:
        await received.ack()
    assert await transport.pending(RESERVE) == 1 + skipped
    await got[2].ack()
    await settled(transport, RESERVE, 0.5)  # reads past what is not its own, if anything
    assert await transport.pending(RESERVE) == 0
    assert await transport.pending(AUDIT) == 4  # the other consumer's own count


async def test_an_unreachable_broker_or_an_unknown_consumer_is_a_transport_error(
    backend: Backend,
) -> None:
    transport = await backend.transport()
    with pytest.raises(TransportError):
        await transport.fetch(RESERVE, timeout=0.2)  # never ensured
    backend.stop()
    try:
        start = time.monotonic()
        with pytest.raises(TransportError):
            await backend.transport()
        assert time.monotonic() - start < REQUEST_TIMEOUT + 2
    finally:
        backend.start()


async def test_a_republished_event_id_is_stored_once(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE,)))
    for _ in range(3):  # the relay crashed between publish and marking the row published
        await transport.publish(message(1))
    await transport.publish(message(2))
    got = await settled(transport, RESERVE, ACK_WAIT * 1.2)
    assert ids(got) == ["evt-1", "evt-2"]


async def test_consumers_of_other_event_types_do_not_see_a_message(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE, AUDIT)))
    await transport.publish(message(1, CANCELLED))
    await transport.publish(message(2))
    assert ids(await settled(transport, RESERVE, ACK_WAIT)) == ["evt-2"]
    assert ids(await settled(transport, AUDIT, ACK_WAIT)) == ["evt-1", "evt-2"]


async def test_a_consumer_ensured_again_with_other_event_types_keeps_its_place(
    backend: Backend,
) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE,)))
    await transport.publish(message(1))
    assert ids(await settled(transport, RESERVE, ACK_WAIT)) == ["evt-1"]
    wider = ConsumerSpec(RESERVE.name, CHANNEL, (PLACED, CANCELLED))  # the model changed
    await transport.ensure(StreamSpec(CHANNEL, "log", (wider,)))
    await transport.publish(message(2, CANCELLED))
    await transport.publish(message(3))
    assert ids(await settled(transport, wider, ACK_WAIT * 1.2)) == ["evt-2", "evt-3"]


async def test_a_consumer_ensured_before_its_first_fetch_gets_earlier_messages(
    backend: Backend,
) -> None:
    relay = await backend.transport()
    await relay.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    for n in range(1, 4):
        await relay.publish(message(n))
    consumer = await backend.transport()  # the consuming deployable starts only now
    got = await drain(consumer, RESERVE, want=3)
    assert ids(got) == ["evt-1", "evt-2", "evt-3"]


async def test_redelivery_after_the_fetcher_died(backend: Backend) -> None:
    first = await backend.transport()
    await first.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    await first.publish(message(1))
    [taken] = await drain(first, RESERVE, want=1)
    died_at = time.monotonic()
    await first.close()  # no ack: the fetcher died

    second = await backend.transport()
    [again] = await drain(second, RESERVE, want=1)
    waited = time.monotonic() - died_at
    print(f"{backend.kind}: redelivered after {waited:.2f}s (ack_wait {ACK_WAIT}s)")
    assert again.message.event_id == taken.message.event_id
    assert again.delivered == 2
    assert waited >= ACK_WAIT * 0.8
    await again.ack()
    assert await settled(second, RESERVE, ACK_WAIT * 1.2) == []


@pytest.mark.parametrize("delay", [ACK_WAIT * 0.6, ACK_WAIT * 3])
async def test_retry_is_not_redelivered_before_its_delay(backend: Backend, delay: float) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    await transport.publish(message(1))
    [received] = await drain(transport, RESERVE, want=1)
    await received.retry(delay)
    asked_at = time.monotonic()
    other = await backend.transport()
    early = await settled(other, RESERVE, delay * 0.8)  # also past ack_wait for the long delay
    assert early == []
    [again] = await drain(other, RESERVE, want=1)
    waited = time.monotonic() - asked_at
    print(f"{backend.kind}: retry({delay}) redelivered after {waited:.2f}s")
    assert again.message.event_id == "evt-1"
    assert again.delivered == 2
    assert delay * 0.8 <= waited < delay + 3


async def test_a_fetch_hands_out_at_most_its_batch_redeliveries_first(backend: Backend) -> None:
    first = await backend.transport()
    await first.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    for n in range(1, 11):
        await first.publish(message(n))
    assert len(await drain(first, RESERVE, want=6)) == 6  # evt-1..6 out with a fetcher that dies
    await first.close()
    second = await backend.transport()
    # the scenario: the ack wait lapses with nobody fetching, so the six are due again before the
    # first fetch (there is nothing to poll that would not consume them)
    await asyncio.sleep(ACK_WAIT * 1.2)
    got: list[Received] = []
    for _ in range(10):  # redeliveries, then the never delivered evt-7..10, three at a time
        if len(got) == 10:
            break
        fetched = await second.fetch(RESERVE, batch=3, timeout=0.5)
        assert 1 <= len(fetched) <= 3
        for received in fetched:
            await received.ack()
        got += fetched
    assert ids(got) == [f"evt-{n}" for n in range(1, 11)]
    assert [r.delivered for r in got] == [2] * 6 + [1] * 4


async def test_in_progress_keeps_a_message_with_its_fetcher(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    await transport.publish(message(1))
    [received] = await drain(transport, RESERVE, want=1)
    other = await backend.transport()
    # A steal is a fault only when the holder said "in progress" less than ack_wait before it.
    # A loaded machine can stall a turn of this loop past ack_wait; the broker may then hand the
    # message on, as it should. Such turns are counted, and the check goes on until three
    # ack_waits of held turns were seen (the message would have gone to `other` without them).
    held = stalled = 0.0
    faults: list[float] = []
    stolen: list[Received] = []
    deadline = time.monotonic() + ACK_WAIT * 30
    while held < ACK_WAIT * 3 and time.monotonic() < deadline:
        said = time.monotonic()
        await received.in_progress()
        fetched = await other.fetch(RESERVE, timeout=ACK_WAIT / 3)
        turn = time.monotonic() - said
        if turn < ACK_WAIT:
            held += turn
            faults += [turn] * len(fetched)
        else:
            stalled += turn
        stolen += fetched
    print(f"in_progress: held {held:.2f} s, stalled turns {stalled:.2f} s, faults {len(faults)}")
    assert faults == [], (
        f"another fetcher took it {faults} s after an in_progress (ack_wait {ACK_WAIT} s)"
    )
    assert held >= ACK_WAIT * 3, f"the machine stalled every turn (held {held:.2f} s)"
    await received.ack()
    for copy in stolen:
        await copy.ack()
    assert await settled(other, RESERVE, ACK_WAIT * 1.2) == []


async def test_a_consumer_gets_messages_in_publish_order(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE,)))
    count = 300
    for n in range(count):
        await transport.publish(message(n))
    got: list[str] = []
    while len(got) < count:
        fetched = await transport.fetch(RESERVE, batch=50, timeout=1.0)
        assert fetched, f"only {len(got)} of {count} came"
        for received in fetched:
            got.append(received.message.event_id)
            await received.ack()
    assert got == [f"evt-{n}" for n in range(count)]


async def test_two_fetchers_of_one_consumer_share_its_messages(backend: Backend) -> None:
    relay = await backend.transport()
    await relay.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    count = 300
    for n in range(count):
        await relay.publish(message(n))
    replicas = [await backend.transport(), await backend.transport()]
    seen: list[Counter[str]] = [Counter(), Counter()]

    async def run(index: int) -> None:
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < ACK_WAIT * 2:
            fetched = await replicas[index].fetch(RESERVE, batch=16, timeout=0.2)
            if fetched:
                idle_since = time.monotonic()
            for received in fetched:
                seen[index][received.message.event_id] += 1
                await received.ack()

    await asyncio.wait_for(asyncio.gather(run(0), run(1)), 60)
    union = seen[0] + seen[1]
    lost = count - len(union)
    doubled = sum(n - 1 for n in union.values())
    shared = len(seen[0].keys() & seen[1].keys())
    print(
        f"{backend.kind}: {count} messages, replica A {sum(seen[0].values())}, "
        f"replica B {sum(seen[1].values())}, lost {lost}, doubled {doubled}, both {shared}"
    )
    assert (lost, doubled, shared) == (0, 0, 0)


async def test_a_log_channel_replays_into_a_consumer_added_later(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE,)))
    for n in range(1, 6):
        await transport.publish(message(n))
    assert len(await settled(transport, RESERVE, ACK_WAIT * 1.2)) == 5  # all acked
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE, AUDIT)))  # a projection added
    assert ids(await settled(transport, AUDIT, ACK_WAIT * 1.2)) == [f"evt-{n}" for n in range(1, 6)]
    assert await settled(transport, RESERVE, ACK_WAIT) == []


async def test_a_work_channel_drops_what_every_consumer_acked(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    for n in range(1, 4):
        await transport.publish(message(n))
    acked = await settled(transport, RESERVE, ACK_WAIT * 1.2)
    assert len(acked) == 3
    await transport.publish(message(4))  # not acked by anyone yet
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE, AUDIT)))
    assert ids(await settled(transport, AUDIT, ACK_WAIT * 1.2)) == ["evt-4"]


async def test_a_broker_restart_keeps_acked_and_unacked_state(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    for n in range(1, 4):
        await transport.publish(message(n))
    got = await drain(transport, RESERVE, want=3)
    await got[0].ack()  # evt-2 and evt-3 are out, unacked, when the broker goes

    backend.stop()
    try:
        start = time.monotonic()
        with pytest.raises(TransportError):
            await transport.publish(message(4))
        took = time.monotonic() - start
        print(f"{backend.kind}: publish during the outage failed after {took:.2f}s")
        assert took < REQUEST_TIMEOUT + 2
    finally:
        backend.start()

    back = await eventually(lambda: transport.publish(message(4)), within=15, what="publish")
    print(f"{backend.kind}: publishing again {back:.2f}s after the restart")
    after = await settled(transport, RESERVE, ACK_WAIT * 3)
    counts = Counter(ids(after))
    lost = {"evt-2", "evt-3", "evt-4"} - counts.keys()
    print(f"{backend.kind}: after the restart {sorted(counts.items())}, lost {sorted(lost)}")
    assert counts == Counter({"evt-2": 1, "evt-3": 1, "evt-4": 1})
    assert {r.message.event_id: r.delivered for r in after}["evt-2"] == 2


async def test_a_broker_crash_loses_no_message(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    for n in range(50):
        await transport.publish(message(n))
    out = await drain(transport, RESERVE, want=30)
    assert ids(out) == [f"evt-{n}" for n in range(30)]
    for received in out[10:]:
        await received.ack()
    acked = set(ids(out[10:]))
    unacked = {f"evt-{n}" for n in range(50)} - acked  # 0..9 out with us, 30..49 never out
    backend.crash()  # SIGKILL right after the acks
    backend.start()
    seen: Counter[str] = Counter()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not unacked <= seen.keys():
        try:
            for received in await transport.fetch(RESERVE, batch=64, timeout=0.5):
                seen[received.message.event_id] += 1
                await received.ack()
        except TransportError:
            await asyncio.sleep(0.1)  # still reconnecting
    seen.update(ids(await settled(transport, RESERVE, ACK_WAIT * 1.2)))
    lost = unacked - seen.keys()
    doubled = sum(n - 1 for n in seen.values())
    again = sorted(acked & seen.keys())
    print(
        f"{backend.kind}: crash with {len(unacked)} unacked, {len(acked)} acked: lost {len(lost)}, "
        f"doubled {doubled}, acked ones delivered again {len(again)}"
    )
    assert (lost, doubled) == (set(), 0)
    if backend.crash_keeps_consumer_state:
        assert again == []


async def test_a_message_no_relay_wrote_is_fetched_as_malformed(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    await backend.inject(CHANNEL, PLACED, {})
    await backend.inject(CHANNEL, PLACED, {"Loom-Event-Type": PLACED})
    await transport.publish(message(1))
    got = await drain(transport, RESERVE, want=3)
    assert len(got) == 3
    for bad in got[:2]:
        with pytest.raises(MalformedMessage, match="no Loom-Event-Id header") as caught:
            _ = bad.message
        assert caught.value.payload in {"not a Loom message", ""}
        await bad.ack()  # dead-lettered by the consumer: never handed out again
    assert got[2].message.event_id == "evt-1"
    await got[2].ack()
    assert await settled(transport, RESERVE, ACK_WAIT * 1.2) == []


async def test_a_pipelined_batch_is_stored_in_its_order_once(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE,)))
    await transport.publish(message(3))  # published before: the batch's copy is a duplicate
    batch = [message(n) for n in range(200)] + [message(7)]  # and one twice within the batch
    results = await transport.publish_many(batch)
    # the 200 first, acked as they come (however loaded the machine), then nothing more
    got: list[Received] = []
    deadline = time.monotonic() + 30
    while len(got) < 200 and time.monotonic() < deadline:
        fetched = await transport.fetch(RESERVE, batch=64, timeout=0.5)
        for received in fetched:
            await received.ack()
        got += fetched
    got += await settled(transport, RESERVE, ACK_WAIT * 1.2)
    stored = Counter(ids(got))
    print(
        f"{backend.kind}: a batch of {len(batch)} (2 duplicates): acked "
        f"{results.count(None)}, stored {len(stored)}, twice {sum(n > 1 for n in stored.values())}"
    )
    assert results == [None] * len(batch)  # a duplicate is acked, and stores nothing
    assert ids(got) == ["evt-3"] + [f"evt-{n}" for n in range(200) if n != 3]


async def test_a_pipelined_batch_during_an_outage_fails_and_is_stored_after(
    backend: Backend,
) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    batch = [message(n) for n in range(20)]
    backend.stop()
    try:
        start = time.monotonic()
        results = await transport.publish_many(batch)
        took = time.monotonic() - start
    finally:
        backend.start()
    print(
        f"{backend.kind}: a batch of 20 during the outage: {results.count(None)} acked, {took:.2f}s"
    )
    assert all(isinstance(r, TransportError) for r in results)
    assert took < REQUEST_TIMEOUT + 2
    again: list[TransportError | None] = []

    async def publish() -> None:
        again[:] = await transport.publish_many(batch)
        if any(again):
            raise TransportError("not yet")

    await eventually(publish, within=15, what="publish_many")
    got = await settled(transport, RESERVE, ACK_WAIT * 2)
    assert ids(got) == [f"evt-{n}" for n in range(20)]


async def test_ack_nowait_settles_a_message(backend: Backend) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "work", (RESERVE,)))
    await transport.publish_many([message(n) for n in range(20)])
    got = await drain(transport, RESERVE, want=20)
    for received in got:
        await received.ack_nowait()  # sent, its confirmation not awaited
    again = await settled(transport, RESERVE, ACK_WAIT * 2)  # past ack_wait: nothing comes back
    print(f"{backend.kind}: 20 acked without confirmation, redelivered {len(again)}")
    assert len(got) == 20 and again == []


async def test_a_refused_message_in_a_pipelined_batch_fails_not_the_ones_before(
    backend: Backend,
) -> None:
    transport = await backend.transport()
    await transport.ensure(StreamSpec(CHANNEL, "log", (RESERVE,)))
    nowhere = "Orders.Nowhere"  # a channel the broker has no stream for: it refuses the message
    if isinstance(backend, RedisBackend):  # XADD would create the stream: occupy its key
        client = aioredis.Redis.from_url(backend.server.url)
        try:
            await client.set(wire.redis_stream_key(nowhere), "not a stream")
        finally:
            await client.aclose()
    refused = dataclasses.replace(message(5), channel=nowhere, event_id="evt-refused")
    batch = [message(n) for n in range(5)] + [refused] + [message(n) for n in range(6, 10)]
    results = await transport.publish_many(batch)
    acked = [m.event_id for m, r in zip(batch, results, strict=True) if r is None]
    got = ids(await settled(transport, RESERVE, ACK_WAIT * 1.2))
    print(f"{backend.kind}: {len(batch)} sent, message 6 refused: acked {len(acked)}, stored {got}")
    assert results[:5] == [None] * 5 and isinstance(results[5], TransportError)
    assert got == acked  # what was acked is stored, in order; what failed is not
