"""The relay publishes a round's rows pipelined, in waves of one row per key (src/loom/runtime/
_publisher.py), on every broker: a publish the broker refuses in the middle of a batch leaves the
rows acked before it marked, and it and every row not sent yet published by a later round; no
row of its key is stored ahead of it; nothing is lost or applied twice."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence

import pytest

from loom.runtime.transports import (
    ConsumerSpec,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)
from loom.testing import settle_all

from .conftest import INVENTORY, ORDERS, Topology, facts
from .test_topology import items, ok, place, reservations_by_order, stock

NOTED = "Orders.OrderNoted"


class Refusing(Transport):
    """A real broker's transport, except that the broker refuses the messages `refuse` picks
    (each in its batch, the others of the batch going through to the broker); every batch is
    recorded as (event id, acked) pairs."""

    def __init__(self, inner: Transport, refuse: Callable[[Message], bool]) -> None:
        super().__init__(ack_wait=inner.ack_wait, dedup_window=inner.dedup_window)
        self.kind = inner.kind
        self.inner = inner
        self.refuse = refuse
        self.batches: list[list[tuple[Message, bool]]] = []

    async def connect(self) -> None:
        await self.inner.connect()

    async def close(self) -> None:
        await self.inner.close()

    async def ensure(self, stream: StreamSpec) -> None:
        await self.inner.ensure(stream)

    async def pending(self, spec: ConsumerSpec) -> int:
        return await self.inner.pending(spec)

    async def fetch(
        self, consumer: ConsumerSpec, *, batch: int = 64, timeout: float = 1.0
    ) -> list[Received]:
        return await self.inner.fetch(consumer, batch=batch, timeout=timeout)

    async def publish(self, message: Message) -> None:
        [failed] = await self.publish_many([message])
        if failed is not None:
            raise failed

    async def publish_many(self, messages: Sequence[Message]) -> list[TransportError | None]:
        refused = [self.refuse(m) for m in messages]
        passed = iter(
            await self.inner.publish_many(
                [m for m, r in zip(messages, refused, strict=False) if not r]
            )
        )
        out = [TransportError("injected: refused") if r else next(passed) for r in refused]
        self.batches.append([(m, e is None) for m, e in zip(messages, out, strict=True)])
        return out


def _note(message: Message) -> tuple[str, int] | None:
    if message.event_type != NOTED:
        return None
    body = json.loads(message.payload)
    return str(body["order"]), int(body["seq"])


async def test_a_refused_publish_in_a_pipelined_batch_is_published_again_nothing_else(
    topology: Topology, two_urls: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    keys: list[str] = []
    refusals = {"left": 1}

    def refuse(message: Message) -> bool:  # the second note of the second order, once
        if _note(message) == (keys[1], 2) and refusals["left"]:
            refusals["left"] -= 1
            return True
        return False

    transport = Refusing(topology.harness.transport(), refuse)
    # Orders without its relay: every row waits in the outbox, for one claim to take them all
    orders = await topology.start(ORDERS, two_urls[0], brokers={"": transport}, relay=False)
    inventory = await topology.start(INVENTORY, two_urls[1])
    await stock(inventory, "lamp")
    keys += [await place(orders) for _ in range(3)]
    for seq in range(1, 6):
        for key in keys:
            await ok(await orders.post(f"/api/orders/{key}/note", json={"seq": seq}), 204)
    assert (await orders.service.outbox.counts())["pending"] == 18

    await orders.service.settle()  # rounds until one claims nothing: the refusal, then the rest
    await settle_all([orders, inventory])

    sent = [[(_note(m) or ("placed", 0), acked) for m, acked in b] for b in transport.batches]
    print(f"{transport.kind}: batches sent (key, seq), acked: {sent}")
    first_round = transport.batches[:3]
    # waves of one row per key: the orders placed, then their first notes, then the second
    assert [len(b) for b in first_round] == [3, 3, 3]
    assert [acked for _, acked in first_round[2]].count(False) == 1
    # nothing of the round was sent after the refused wave; its later rows came in later rounds
    later = [_note(m) for b in transport.batches[3:] for m, _ in b]
    assert sorted(n for n in later if n is not None) == sorted(
        [(keys[1], 2)] + [(key, seq) for key in keys for seq in range(3, 6)]
    )
    published = Counter(m.event_id for b in transport.batches for m, acked in b if acked)
    sends = Counter(m.event_id for b in transport.batches for m, _ in b)
    failed = facts(caplog, "publish_failed")
    print(
        f"{transport.kind}: rows 18, publishes {sum(sends.values())}, acked {sum(published.values())}"
        f" (once each: {set(published.values()) == {1}}), publish_failed lines {len(failed)} "
        f"(released {failed[0]['released'] if failed else None})"
    )
    assert len(published) == 18 and set(published.values()) == {1}  # each acked once
    assert sum(sends.values()) == 19  # the refused one twice, every other once
    assert len(failed) == 1 and failed[0]["released"] == 10  # it, and 3 keys x notes 3..5
    ours = [f for f in facts(caplog, "event_published") if f["event_type"].startswith("Orders.")]
    assert len(ours) == 18

    notes = sorted(await items(inventory, "/api/notes"), key=lambda n: n["id"])  # UUIDv7 order
    applied = {key: [n["seq"] for n in notes if n["order"] == key] for key in keys}
    reserved = await reservations_by_order(inventory)
    skipped = facts(caplog, "event_skipped_duplicate")
    print(
        f"{transport.kind}: notes applied per key, in order: {list(applied.values())}; "
        f"reservations {sorted(reserved.values())}; duplicates skipped {len(skipped)}"
    )
    assert applied == {key: [1, 2, 3, 4, 5] for key in keys}  # per-key order held
    assert reserved == dict.fromkeys(keys, 1)
    # the broker holds each event once: a duplicate in the stream would be a first delivery
    # skipped; a redelivery (a slow reaction outlasting ack_wait on a loaded machine) is not one
    assert [s for s in skipped if s["attempt"] == 1] == []
    assert await orders.service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 0}
