"""The outbox and the inbox, on every backend. It pins what the relay relies on: rows commit with
their transaction, claims take due rows in event order and respect leases, marks are guarded by
the claim, the inbox admits one processing per consumer and event, and dead letters can be listed
and put back."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import ClassVar, NewType
from uuid import UUID

import pytest
from sqlalchemy import func, insert, select

from loom.runtime import (
    AlreadyHandled,
    Backoff,
    Channel,
    DomainEvent,
    Service,
    current_envelope,
    new_id,
)
from loom.runtime.messaging.outbox import outbox
from loom.runtime.messaging.relay import Relay

from ..events_kit import MovingClock, moving_clock
from .conftest import Backend

ThingId = NewType("ThingId", UUID)


class Colour(enum.StrEnum):
    RED = "Red"
    BLUE = "Blue"


@dataclass(frozen=True, kw_only=True)
class Happened(DomainEvent):
    event_type: ClassVar[str] = "Lab.Happened"
    n: int
    thing: ThingId = field(default_factory=lambda: ThingId(new_id()))
    amount: Decimal = Decimal(0)
    at: datetime = datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=UTC)
    day: date = date(2030, 1, 2)
    colour: Colour = Colour.RED
    maybe: str | None = None
    amounts: list[Decimal] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Noted(DomainEvent):
    event_type: ClassVar[str] = "Lab.Noted"
    text: str


CHANNELS = [
    Channel("lab", ["Lab.Happened"], max_attempts=3, backoff=Backoff(initial=timedelta(0))),
    Channel("notes", ["Lab.Noted"], retention="log"),
]


async def count(service: Service, **where: object) -> int:
    stmt = select(func.count()).select_from(outbox)
    for key, value in where.items():
        stmt = stmt.where(outbox.c[key] == value)
    async with service.engine.connect() as conn:
        return int((await conn.execute(stmt)).scalar_one())


async def emit(service: Service, *events: DomainEvent) -> None:
    async with service.transaction() as work:
        for event in events:
            work.emit(event)


class TestOutboxAndInbox:
    @pytest.fixture
    async def service(self, backend: Backend) -> Service:
        service = await backend.service(channels=CHANNELS)
        service.events.register(Happened)
        service.events.register(Noted)
        return service

    @pytest.fixture
    def clock(self) -> Iterator[MovingClock]:
        with moving_clock() as moving:
            yield moving

    async def test_a_row_exists_iff_its_transaction_committed(self, service: Service) -> None:
        async with service.transaction() as work:
            work.emit(Happened(n=1))
            work.emit(Noted(text="x"))
            assert await count(service) == 0  # nothing before the commit
        assert await count(service, status="pending") == 2
        with pytest.raises(RuntimeError):
            async with service.transaction() as work:
                work.emit(Happened(n=2))
                raise RuntimeError("body failed")
        assert await count(service) == 2

    async def test_payloads_round_trip_exactly(self, service: Service) -> None:
        sent = Happened(
            n=2**62,
            amount=Decimal("-12345678901234567890.1234567890"),
            at=datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            colour=Colour.BLUE,
            maybe="ünïcødé ✓",
            amounts=[Decimal("1E+30"), Decimal("0.10")],
        )
        got: list[DomainEvent] = []

        async def keep(event: DomainEvent) -> None:
            got.append(event)

        service.events.subscribe(Happened, keep, name="lab.keep")
        await emit(service, sent)
        await service.settle()
        assert got == [sent]
        assert [str(a) for a in got[0].amounts] == ["1E+30", "0.10"]  # type: ignore[attr-defined]

    async def test_claims_take_due_rows_in_event_order_up_to_the_batch(
        self, service: Service, clock: MovingClock
    ) -> None:
        await emit(service, *(Happened(n=i) for i in range(5)))
        relay = Relay(service, batch_size=2)
        first, _ = await relay._claim()
        second, _ = await relay._claim()  # the first two are leased now
        third, _ = await relay._claim()
        ids = [r.event_id for r in first + second + third]
        assert [len(first), len(second), len(third)] == [2, 2, 1]
        assert ids == sorted(ids) and len(set(ids)) == 5
        assert (await relay._claim())[0] == []
        assert await count(service, claimed_by=relay.name) == 5

    async def test_a_live_lease_excludes_other_relays_until_it_expires(
        self, service: Service, clock: MovingClock
    ) -> None:
        await emit(service, Happened(n=1))
        first, second = Relay(service), Relay(service)
        (claimed,), _ = await first._claim()
        assert (await second._claim())[0] == []
        clock.advance(first.lease.total_seconds() + 1)
        (again,), _ = await second._claim()
        assert again.event_id == claimed.event_id
        assert await count(service, claimed_by=second.name) == 1

    async def test_marks_are_guarded_by_the_claim(
        self, service: Service, clock: MovingClock
    ) -> None:
        await emit(service, Happened(n=1))
        first, second = Relay(service), Relay(service)
        (row,), _ = await first._claim()
        clock.advance(first.lease.total_seconds() + 1)
        (row2,), _ = await second._claim()
        await first._mark([(row, [])], [])  # lost its lease: changes nothing
        assert await count(service, claimed_by=second.name) == 1
        await first._mark([(row, ["boom"])], [])
        assert await count(service, attempts=0, claimed_by=second.name) == 1
        await second._mark([(row2, [])], [])
        assert await count(service) == 0

    async def test_the_inbox_admits_one_processing_per_consumer_and_event(
        self, service: Service
    ) -> None:
        applied: list[tuple[str, UUID]] = []
        fail_next = [True]

        def consumer(name: str) -> Callable[[DomainEvent], Awaitable[None]]:
            async def handle(event: DomainEvent) -> None:
                async with service.reaction() as work:
                    await work.connection()
                    envelope = current_envelope()
                    assert envelope is not None
                    if name == "lab.b" and fail_next[0]:
                        fail_next[0] = False
                        raise RuntimeError("b fails once")  # its inbox row rolls back too
                    applied.append((name, envelope.event_id))

            return handle

        service.events.subscribe(Happened, consumer("lab.a"), name="lab.a")
        service.events.subscribe(Happened, consumer("lab.b"), name="lab.b")
        await emit(service, Happened(n=1))
        relay = Relay(service)
        rows, _ = await relay._claim()
        envelope, _ = relay._decode(rows[0])
        assert envelope is not None
        assert await relay._deliver(rows[0], envelope) == ["lab.b: RuntimeError: b fails once"]
        assert await relay._deliver(rows[0], envelope) == []  # a: skipped; b: applied now
        assert await relay._deliver(rows[0], envelope) == []  # both skipped
        event_id = rows[0].event_id
        assert applied == [("lab.a", event_id), ("lab.b", event_id)]
        # outside a durable delivery, reaction() is a plain transaction: no inbox involved
        async with service.reaction() as work:
            await work.connection()

    async def test_old_inbox_records_can_be_pruned(
        self, service: Service, clock: MovingClock
    ) -> None:
        from loom.runtime.messaging.outbox import inbox

        async def handle(event: DomainEvent) -> None:
            async with service.reaction() as work:
                await work.connection()

        service.events.subscribe(Happened, handle, name="lab.handle")
        await emit(service, Happened(n=1))
        await service.settle()
        clock.advance(3600)
        cutoff = clock()
        await emit(service, Happened(n=2))
        await service.settle()
        assert await service.outbox.prune_inbox(cutoff) == 1
        async with service.engine.connect() as conn:
            left = (await conn.execute(select(inbox.c.consumer, inbox.c.processed_at))).all()
        assert len(left) == 1 and left[0].processed_at >= cutoff

    async def test_already_handled_is_raised_before_the_body(self, service: Service) -> None:
        from loom.runtime.messaging.events import Delivery, _delivery, new_envelope

        envelope = new_envelope(Happened(n=1), None)
        token = _delivery.set(Delivery("lab.direct", envelope, durable=True))
        try:
            async with service.reaction():
                pass
            ran = False
            with pytest.raises(AlreadyHandled):
                async with service.reaction():
                    ran = True
            assert not ran
        finally:
            _delivery.reset(token)

    async def test_retention_log_keeps_delivered_rows(self, service: Service) -> None:
        await emit(service, Noted(text="kept"), Happened(n=1))
        await service.settle()
        async with service.engine.connect() as conn:
            rows = (await conn.execute(select(outbox))).all()
        assert [(r.event_type, r.status, r.claimed_by) for r in rows] == [
            ("Lab.Noted", "delivered", None)
        ]
        assert rows[0].delivered_at is not None

    async def test_failures_reschedule_then_dead_letter(self, service: Service) -> None:
        async def broken(event: DomainEvent) -> None:
            raise ValueError("always")

        service.events.subscribe(Happened, broken, name="lab.broken")
        await emit(service, Happened(n=1), Happened(n=2))
        await service.settle()  # zero backoff: three attempts each, then dead
        assert await service.outbox.counts() == {"pending": 0, "delivered": 0, "dead": 2}
        dead = await service.outbox.dead_letters()
        assert [d.payload["n"] for d in dead] == [1, 2]
        assert dead[0].attempts == 3
        assert dead[0].last_error == "lab.broken: ValueError: always"
        assert (await service.outbox.dead_letters(limit=1, offset=1))[0].event_id == dead[
            1
        ].event_id
        assert await service.outbox.redrive(new_id()) is False
        assert await service.outbox.redrive(dead[0].event_id) is True
        assert await service.outbox.redrive(dead[0].event_id) is False  # pending now, not dead
        assert await service.outbox.counts() == {"pending": 1, "delivered": 0, "dead": 1}
        assert await service.outbox.redrive_all() == 1
        async with service.engine.connect() as conn:
            attempts = (await conn.execute(select(outbox.c.attempts))).scalars().all()
        assert attempts == [0, 0]

    async def test_rows_nobody_can_decode_end_as_dead_letters(self, service: Service) -> None:
        now = datetime.now(UTC)
        row = {
            "event_id": new_id(),
            "channel": "lab",
            "event_type": "Lab.Unknown",
            "payload": "{}",
            "correlation_id": "c",
            "causation_id": None,
            "occurred_at": now,
            "available_at": now,
            "attempts": 0,
            "status": "pending",
        }
        garbled = {**row, "event_id": new_id(), "event_type": "Lab.Happened", "payload": "{"}
        async with service.transaction() as work:
            conn = await work.connection()
            await conn.execute(insert(outbox), [row, garbled])
        await service.settle()
        dead = {d.event_type: d for d in await service.outbox.dead_letters()}
        assert dead["Lab.Unknown"].last_error == "no event class is registered for Lab.Unknown"
        assert dead["Lab.Unknown"].payload == {}
        error = dead["Lab.Happened"].last_error or ""
        assert error.startswith("the payload does not decode as Happened")
        assert dead["Lab.Happened"].payload == {"_unparsed": "{"}  # still listed
