"""The service: engine, event bus, durable channels, outbox relay and fault hooks; it hands out
units of work (`storage.work.Work`)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.model.isolation import ISOLATION_LEVELS
from loom.runtime.http.api_calls import ApiClient, Apis
from loom.runtime.http.idempotency import Idempotency, idempotency_metadata
from loom.runtime.messaging.brokers import Brokers
from loom.runtime.messaging.channels import Channel, route_table
from loom.runtime.messaging.consumer import Consumers
from loom.runtime.messaging.events import Delivery, EventBus, current_delivery
from loom.runtime.messaging.outbox import Outbox, runtime_metadata
from loom.runtime.messaging.outlet import Outlet
from loom.runtime.messaging.relay import Relay
from loom.runtime.messaging.transports.base import Transport
from loom.runtime.storage.engine import (
    BEGIN_OPTION,
    SCHEMA_LOCK,
    create_engine,
    unit_engines,
)
from loom.runtime.storage.journal import Step
from loom.runtime.storage.schema_check import SchemaMismatch, differences, read_shape, shape_of
from loom.runtime.storage.work import Work
from loom.runtime.values.faults import Faults
from loom.runtime.values.types import number_keys

if TYPE_CHECKING:  # loaded when a service uses processes: a model without any never imports them
    from loom.runtime.processes.recurring import Recurring
    from loom.runtime.processes.runner import ProcessRunner
    from loom.runtime.processes.scheduler import Scheduler
    from loom.runtime.processes.timers import TimeoutHandlers, TimerQueue
    from loom.runtime.values.traces import Tracer

__all__ = ["Service", "schema_metadatas"]


def schema_metadatas(
    metadata: MetaData, *, channels: bool, processes: bool
) -> tuple[MetaData, ...]:
    """The schema of a service: the model's tables (`metadata`) and the runtime tables it uses:
    `__loom_idempotency` always, `__loom_outbox` / `__loom_inbox` with channels, and
    `__loom_processes` / `__loom_timers` / `__loom_ticks` / `__loom_episodes` with processes, and
    `__loom_audit` (the admin routes' audit log) with either. The
    one answer to which tables a service needs: its start-up and `loom.migrate`'s snapshots both
    ask it."""
    out = [metadata, idempotency_metadata]
    if channels:
        out.append(runtime_metadata)
    if processes:
        from loom.runtime.processes.tables import process_metadata

        out.append(process_metadata)
    if channels or processes:  # the services with admin routes (`service.app`)
        from loom.runtime.http.audit import audit_metadata

        out.append(audit_metadata)
    return tuple(out)


class Service:
    """One per app (on `app.state.loom`): the engine, the event bus, the durable channels with
    their outbox and relay, and the fault hooks.

    `relay_options` go to `Relay` (poll_interval, batch_size, lease, listen, name).

    `contexts` are the contexts this deployable holds (None: all of them); `brokers` maps a
    `channelSource` name ("" for channels naming none) to its transport: a channel whose source
    has one is on that broker (docs/events.md, "Channels on a broker"); `consumer_options` go to
    `Consumers` (max_in_flight, fetch_timeout, batch, gap_limit)."""

    def __init__(
        self,
        engine: AsyncEngine,
        metadata: MetaData,
        *,
        events: EventBus | None = None,
        faults: Faults | None = None,
        lock_reads: bool = True,
        channels: Sequence[Channel] = (),
        relay_options: Mapping[str, Any] | None = None,
        processes: bool = False,
        scheduler_options: Mapping[str, Any] | None = None,
        contexts: Sequence[str] | None = None,
        brokers: Mapping[str, Transport] | None = None,
        consumer_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.engine = engine
        self.unit_engines = unit_engines(engine)
        self.metadata = metadata
        number_keys(metadata)
        bus = events or EventBus()
        self.faults = faults or Faults()
        # the user's extern classes by name (loaded by create_app's lifespan)
        self.externs: dict[str, Any] = {}
        # the tenanted contexts served (docs/language.md#tenants): a broker consumer of theirs
        # applies no message without a tenant
        self.tenanted: frozenset[str] = frozenset()
        # its spans (`values/traces.py`); None: it does not trace (`create_app` sets it)
        self.tracer: Tracer | None = None
        self.dialect = engine.dialect.name
        self.is_sqlite = self.dialect == "sqlite"
        # PostgreSQL: rows read inside `transaction()` are locked (SELECT ... FOR UPDATE), so
        # writers of one row queue instead of failing; the version check stays the safety net.
        self.lock_reads = lock_reads and self.dialect == "postgresql"
        # SQLite has one writer at a time. Transactional units of work of this process queue on
        # this lock before `BEGIN IMMEDIATE`, instead of in SQLite's busy handler, which polls with
        # sleeps of up to 100 ms and so collapses throughput under concurrency. Other processes
        # still meet the busy timeout.
        self.sqlite_writer: asyncio.Lock | None = asyncio.Lock() if self.is_sqlite else None
        self.channels: tuple[Channel, ...] = tuple(channels)
        # event type -> channel; empty means every event takes the in-process path
        self.routes, self.channels_by_name = route_table(self.channels)
        self.relay = Relay(self, **dict(relay_options or {}))
        self.outbox = Outbox(self, self.relay)
        # which channels ride a broker here, and the consumers reading them (`start_brokers`)
        self.brokers = Brokers(contexts, brokers, self.channels)
        self.outlet = Outlet(self.dialect, self.routes, bus, self.brokers, self.relay)
        self.consumers = Consumers(self, **dict(consumer_options or {}))
        # process managers, timeouts and context timers (loom.runtime.processes): made on first
        # use, so that a model without them does not import them (`loom run` starts sooner)
        self._uses_processes = processes
        self._scheduler_options = dict(scheduler_options or {})
        self._timeouts: TimeoutHandlers | None = None
        self._recurring: Recurring | None = None
        self._scheduler: Scheduler | None = None
        self._timers: TimerQueue | None = None
        self._processes: ProcessRunner | None = None
        if processes or scheduler_options:
            self.timers  # noqa: B018 - made now: bad scheduler options refuse the construction
        # Idempotency-Key records (docs/http.md#idempotency-keys); create_app sets the ttl
        self.idempotency = Idempotency(self)
        # the `resource { kind: api }` bindings and their clients (create_app starts them)
        self.apis = Apis()
        # process -> the generated `<Workflow>InstanceOut` its episodes are archived as
        self.instance_answers: Mapping[str, Any] = {}

    @property
    def events(self) -> EventBus:
        """The event bus: the handlers subscribed, run in-process or by the relay and consumers."""
        return self.outlet.events

    @events.setter
    def events(self, bus: EventBus) -> None:
        self.outlet.events = bus

    @property
    def uses_processes(self) -> bool:
        """Whether the process tables belong to the schema: `processes=True`, or any timeout
        handler or context timer registered."""
        return self._uses_processes or bool(self._timeouts) or bool(self._recurring)

    @property
    def timeouts(self) -> TimeoutHandlers:
        """The processes' timeout handlers (`register(process, handler, ...)`)."""
        if self._timeouts is None:
            from loom.runtime.processes.timers import TimeoutHandlers

            self._timeouts = TimeoutHandlers()
        return self._timeouts

    @property
    def recurring(self) -> Recurring:
        """The context timers (`register(name, every, handler)`)."""
        if self._recurring is None:
            from loom.runtime.processes.recurring import Recurring

            self._recurring = Recurring()
        return self._recurring

    @property
    def scheduler(self) -> Scheduler:
        """What fires due timeouts and context-timer ticks (`scheduler_options` go to it)."""
        if self._scheduler is None:
            from loom.runtime.processes.scheduler import Scheduler

            self._scheduler = Scheduler(self, **self._scheduler_options)
        return self._scheduler

    @property
    def timers(self) -> TimerQueue:
        """The armed timeouts: their dead letters, redrives and counts."""
        if self._timers is None:
            from loom.runtime.processes.timers import TimerQueue

            self._timers = TimerQueue(self, self.scheduler)
        return self._timers

    @property
    def processes(self) -> ProcessRunner:
        """The service's `ProcessRunner` on the SQL store (`loom.runtime.processes`)."""
        if self._processes is None:
            from loom.runtime.processes.runner import ProcessRunner

            self._uses_processes = True
            self._processes = ProcessRunner(self)
        return self._processes

    @classmethod
    def from_url(
        cls,
        url: str,
        metadata: MetaData,
        *,
        channels: Sequence[Channel] = (),
        relay_options: Mapping[str, Any] | None = None,
        processes: bool = False,
        scheduler_options: Mapping[str, Any] | None = None,
        contexts: Sequence[str] | None = None,
        brokers: Mapping[str, Transport] | None = None,
        consumer_options: Mapping[str, Any] | None = None,
        **engine_options: Any,
    ) -> Service:
        """A service on `url` (`postgresql://` and `sqlite://` get their async drivers)."""
        engine = create_engine(url, **engine_options)
        return cls(
            engine,
            metadata,
            channels=channels,
            relay_options=relay_options,
            processes=processes,
            scheduler_options=scheduler_options,
            contexts=contexts,
            brokers=brokers,
            consumer_options=consumer_options,
        )

    def schema(self) -> tuple[MetaData, ...]:
        """The metadatas of this service's tables (`schema_metadatas`)."""
        return schema_metadatas(
            self.metadata, channels=bool(self.channels), processes=self.uses_processes
        )

    async def create_schema(self) -> None:
        """Create the service's tables (`schema()`) in a database that has none of them, or check
        that a database holding some has them all, column for column (`storage.schema_check`): a
        database behind its model is refused with `SchemaMismatch`, saying what differs and the
        command that fixes it, instead of failing request after request. Replicas starting
        together on one database create it one after the other: the later ones find the tables
        there."""
        metadatas = self.schema()
        expected = shape_of(metadatas)
        async with self.engine.connect() as opened:
            conn = opened
            if self.is_sqlite:
                conn = await opened.execution_options(**{BEGIN_OPTION: "BEGIN IMMEDIATE"})
            async with conn.begin():
                if self.dialect == "postgresql":  # SQLite: BEGIN IMMEDIATE already serialises
                    await conn.execute(SCHEMA_LOCK)
                actual = await conn.run_sync(read_shape, expected)
                if not actual:
                    for metadata in metadatas:
                        await conn.run_sync(metadata.create_all)
                else:
                    diffs = differences(expected, actual)
                    if diffs:
                        raise SchemaMismatch(diffs)
        if self._recurring:
            await self.scheduler.ticks.ensure_rows()  # first ticks `every` from the first start

    def api(self, resource: str) -> ApiClient:
        """The calls through an API resource, named `Context.resource`."""
        return self.apis(resource)

    async def dispose(self) -> None:
        await self.apis.close()
        await self.consumers.stop()
        await self.stop_scheduler()
        await self.relay.stop()
        await self.brokers.close_all()
        await self.engine.dispose()

    def transaction(self, isolation: str | None = None) -> Work:
        """`async with service.transaction() as work:` one connection, one transaction; events
        are dispatched (or written to the outbox) at the commit."""
        if isolation is not None and isolation not in ISOLATION_LEVELS:
            raise ValueError(
                f"isolation must be one of {sorted(ISOLATION_LEVELS)} or None, not {isolation!r}"
            )
        return Work(self, True, isolation)

    def autocommit(self) -> Work:
        """`async with service.autocommit() as work:` each save commits on its own and
        dispatches its events right after."""
        return Work(self, False, None)

    def reaction(self) -> Work:
        """`async with service.reaction() as work:` the transactional unit of work of the
        handler being run. For a durable delivery it first records (consumer, event_id) in the
        inbox, in the same transaction, and raises `AlreadyHandled` when a previous delivery
        already did: a redelivered event is skipped, never applied twice; for a broker message
        with key counts it then takes the key's turn (`messaging.ordering.claim_turn`). Elsewhere it is
        `transaction()`. The instances it saves journal the delivery as their step
        (`storage/journal.py`)."""
        delivery = current_delivery()
        if delivery is None:
            return Work(self, True, None)
        step = partial(_reaction_step, delivery)
        if not delivery.durable:
            return Work(self, True, None, step=step)
        return Work(self, True, None, entry=self.outlet.entry(delivery), step=step)

    async def start_relay(self) -> None:
        """Run the outbox relay in the background (create_app's lifespan does this)."""
        await self.relay.start()

    async def stop_relay(self) -> None:
        await self.relay.stop()

    async def start_brokers(self) -> None:
        """Decide what each broker carries (`Brokers.plan`, with the handlers subscribed by now;
        `StartupRefused` when a channel that must cross deployables has none), connect to each
        broker and ensure its streams (one that cannot be reached is logged and retried in the
        background), then run the broker consumers. create_app's lifespan does this."""
        if not self.brokers.planned:
            self.brokers.plan(self.events)
        await self.brokers.open_all()
        await self.consumers.start(self.brokers.consumed)

    async def start_scheduler(self) -> None:
        """Fire due timeouts and context-timer ticks in the background (create_app's lifespan
        does this when the service uses processes)."""
        await self.scheduler.start()

    async def stop_scheduler(self) -> None:
        if self._scheduler is not None:  # never made: nothing runs
            await self._scheduler.stop()

    async def settle(self) -> int:
        """Deliver everything due now, the deliveries' own durable events included, and return
        when nothing is due (in-process reactions already ran before their request answered).
        Rows another service holds a live lease on, and retries scheduled later, are not due.
        Answers how many events were delivered."""
        return await self.relay.settle() if self.channels else 0


def _reaction_step(delivery: Delivery) -> Step:
    """The step of a reaction's unit of work, for the journal of the instances it saves."""
    envelope = delivery.envelope
    event_id = str(envelope.event_id)
    return Step(
        "reaction", delivery.consumer, envelope.event_type, event_id, envelope.correlation_id
    )
