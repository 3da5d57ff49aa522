"""The messaging side of the service's units of work (`storage.hosts.Outlet`): which events a durable
channel carries, their outbox rows (stamped with their key counts when a broker publishes them),
the inbox row a reaction records first, in-process dispatch, and waking the relay after a commit.

It is what lets a unit of work (the storage layer) raise events without knowing the channels,
the brokers or the relay above it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.messaging.brokers import BrokerLink, Brokers
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.events import AlreadyHandled, Delivery, EventBus
from loom.runtime.messaging.ordering import claim_turn, enter_first, write_durable
from loom.runtime.messaging.outbox import REACTION, HandedRow, Lease, inbox_insert
from loom.runtime.storage.work import Entry
from loom.runtime.values import clock
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.principal import current_principal


class Wakes(Protocol):
    """The relay of this process, as far as committing outbox rows goes."""

    def wake_local(self) -> None: ...

    def lease_for_commit(self) -> Lease | None: ...

    def hand_over(self, rows: Sequence[HandedRow]) -> None: ...


class Outlet:
    """One per service (`service.outlet`)."""

    __slots__ = ("_brokers", "_relay", "dialect", "events", "routes")

    def __init__(
        self,
        dialect: str,
        routes: Mapping[str, Channel],
        events: EventBus,
        brokers: Brokers,
        relay: Wakes,
    ) -> None:
        self.dialect = dialect
        # event type -> channel; empty means every event takes the in-process path
        self.routes = routes
        # the bus running in-process reactions (the test kit swaps in a recorder)
        self.events = events
        self._brokers = brokers
        self._relay = relay

    @property
    def model_revision(self) -> str | None:
        return self.events.model_revision

    def publishing(self, channel: Channel, event_type: str) -> BrokerLink | None:
        return self._brokers.publishing(channel, event_type)

    def carried(self, events: Sequence[DomainEvent]) -> list[tuple[Channel, DomainEvent]]:
        """`events` (every one durable) with the channel carrying each."""
        routes = self.routes
        return [(routes[event.event_type], event) for event in events]

    async def write(
        self, conn: AsyncConnection, events: Sequence[DomainEvent]
    ) -> Sequence[HandedRow]:
        """Write the outbox rows of `events`: leased to this process's relay when it takes them
        from memory after the commit (answered, for `sent`), else due for any relay to claim."""
        return await write_durable(conn, self, self.carried(events), self._relay.lease_for_commit())

    async def dispatch(self, events: Sequence[DomainEvent]) -> None:
        await self.events.dispatch(events)

    def sent(self, written: Sequence[HandedRow] = ()) -> None:
        """The rows `write` answered were committed: hand them to the relay (or wake it, for rows
        written due)."""
        if written:
            self._relay.hand_over(written)
        else:
            self._relay.wake_local()

    def entry(self, delivery: Delivery) -> Entry:
        """A reaction's first statements for the durable `delivery`: its inbox row, and for a
        broker message with key counts its key's turn (`messaging.ordering.claim_turn`);
        `AlreadyHandled` when a previous delivery already applied it."""
        dialect = self.dialect

        async def enter(conn: AsyncConnection) -> None:
            envelope = delivery.envelope
            consumer, event_id = delivery.consumer, envelope.event_id
            params = {
                "consumer": consumer,
                "event_id": event_id,
                "processed_at": clock.now(),
                "tenant": current_principal().tenant,
                "kind": REACTION,
                "event_type": envelope.event_type,
                "correlation_id": envelope.correlation_id,
                "causation_id": envelope.causation_id,
                "occurred_at": envelope.occurred_at,
            }
            order = delivery.order
            if order is not None and order.first and dialect == "postgresql":
                entered = await enter_first(conn, order, params)
            else:
                entered = (await conn.execute(inbox_insert(dialect), params)).rowcount > 0
                if entered and order is not None:
                    await claim_turn(conn, dialect, order)
            if not entered:
                raise AlreadyHandled(f"{consumer} already handled event {event_id}")

        return enter
