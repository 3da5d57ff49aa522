"""Broker consumers: each local reaction to events another deployable produces reads them from
the broker as a durable consumer (`Brokers.plan` decides which), one loop per consumer.

A loop fetches messages and hands each to the lane of its key: a lane applies its messages one
after the other, so events of one key are applied in publish order, while lanes of other keys run
concurrently (at most `max_in_flight` messages held per consumer). Applying one message runs the
reaction through `EventBus.deliver`, so `service.reaction()` records the inbox row in the
reaction's own transaction: a redelivered message is skipped, never applied twice. The message is
acked only after that commit; the ack is sent without waiting for the broker's confirmation
(`ack_nowait`): a lost one is a redelivery, which the inbox skips.

Across replicas (which share a consumer, each fetching some of its messages), a message with key
counts (`messaging/key_order.py`) is applied only once every earlier event of its key is: the reaction's
transaction checks that on the locked progress rows and records it (`messaging.ordering.claim_turn`); when
one is missing (another replica holds it), the lane polls until it is applied, 5 ms growing to
50 ms, for at most `gap_limit` seconds, then applies it anyway (`event_order_gap`). A lane keeps its messages in key order
(a redelivery fetched after a later message goes before it).

A failure is retried in place with the channel's backoff (the message stays held, kept from
redelivery by `in_progress`, and the lane's later messages wait behind it); after the channel's
`max_attempts` the event becomes a `dead` row of this service's outbox, where `loom dead-letters`
and the admin routes redrive it (the local relay then delivers it), and the message is acked. A
broker that cannot be reached is logged (`consumer_error`) and retried with backoff; the loop
never ends on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from loom.model import messaging as wire
from loom.runtime.messaging.brokers import Consumed
from loom.runtime.messaging.claimant import failure_pause
from loom.runtime.messaging.events import EventBus, EventEnvelope, Undeliverable
from loom.runtime.messaging.key_order import KeyOrder, order_of
from loom.runtime.messaging.ordering import applied, record_progress
from loom.runtime.messaging.outbox import DEAD, row_fields, write_dead_letter
from loom.runtime.messaging.transports.base import MalformedMessage, Message, Received
from loom.runtime.storage.lease import MAX_ERROR
from loom.runtime.storage.work import Units
from loom.runtime.values import clock
from loom.runtime.values.faults import Faults
from loom.runtime.values.ids import new_id
from loom.runtime.values.logs import log_fact
from loom.runtime.values.metrics import DEAD_LETTERED, RETRIED
from loom.runtime.values.tracing import note

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer


class ConsumerHost(Units, Protocol):
    """What broker consumers need of the service: units of work, the event bus that runs the
    reactions, the fault hooks and the tenanted contexts it serves."""

    @property
    def events(self) -> EventBus: ...

    @property
    def faults(self) -> Faults: ...

    @property
    def tenanted(self) -> frozenset[str]: ...

    @property
    def tracer(self) -> Tracer | None: ...


class _Crash(Exception):
    """A simulated process crash (`Faults.crash_consumer`)."""


class _Stopped(Exception):
    """The service is stopping: leave the message to the broker."""


class Consumers:
    """`service.consumers`. Options: max_in_flight (messages one consumer holds at once),
    fetch_timeout (s, how long one fetch waits for a first message), batch (messages per
    fetch), gap_limit (s, how long a message waits for an earlier event of its key before it is
    applied without it)."""

    def __init__(
        self,
        service: ConsumerHost,
        *,
        max_in_flight: int = 64,
        fetch_timeout: float = 1.0,
        batch: int = 64,
        gap_limit: float = 5.0,
    ) -> None:
        if max_in_flight < 1 or batch < 1 or fetch_timeout <= 0 or gap_limit <= 0:
            raise ValueError(
                "consumers: max_in_flight, batch, fetch_timeout and gap_limit must be positive"
            )
        self._service = service
        self.max_in_flight = max_in_flight
        self.fetch_timeout = fetch_timeout
        self.batch = batch
        self.gap_limit = gap_limit
        self.loops: list[ConsumerLoop] = []
        self.stopping = False
        self.crashed = False
        self.stopped = asyncio.Event()  # set with `stopping`: cuts every wait short
        self.handled = 0  # messages settled (acked or dead-lettered) so far

    @property
    def held(self) -> int:
        """Messages fetched and not settled yet."""
        return sum(loop.held for loop in self.loops)

    async def start(self, consumed: Sequence[Consumed]) -> None:
        self.stopping = self.crashed = False
        self.stopped = asyncio.Event()
        self.loops = [ConsumerLoop(self._service, self, c) for c in consumed]
        for loop in self.loops:
            loop.start()

    async def stop(self, timeout: float = 5.0) -> None:
        """Stop fetching; let held messages finish (a message waiting for its retry goes back to
        the broker at once), up to `timeout` seconds, then cancel what is left (the broker hands
        those out again after `ack_wait`)."""
        self.stopping = True
        self.stopped.set()
        tasks = [t for loop in self.loops for t in loop.tasks()]
        for loop in self.loops:
            loop.room.set()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.loops = []

    def drained_since(self, since: float) -> bool:
        """Whether every consumer holds nothing and has finished a fetch that began at `since`
        (monotonic) or later and found nothing: the broker had nothing for it then."""
        return all(loop.held == 0 and loop.last_empty >= since for loop in self.loops)

    def crash_point(self) -> None:
        faults = self._service.faults
        if faults.consumer_crash == "commit":
            faults.consumer_crash = None
            self.crashed = self.stopping = True
            self.stopped.set()
            log_fact("consumer_crashed", logging.ERROR, {"after": "commit"})
            raise _Crash("commit")


class ConsumerLoop:
    """One durable consumer: its fetch loop, its lanes (one per key) and the keep-alive that
    keeps held messages from being handed to another fetcher."""

    def __init__(self, service: ConsumerHost, owner: Consumers, consumed: Consumed) -> None:
        self._service = service
        self._owner = owner
        self.consumed = consumed
        self.spec = consumed.spec
        self.held = 0
        self.last_empty = -1.0  # monotonic start of the last fetch that found nothing
        self.room = asyncio.Event()  # a held message was settled, or the service is stopping
        self._lanes: dict[str, deque[_Held]] = {}
        self._lane_tasks: set[asyncio.Task[None]] = set()
        self._main: list[asyncio.Task[None]] = []
        self._tenanted_for: frozenset[str] | None = None  # `_tenanted_contexts`' cache
        self._tenanted: list[str] = []
        # whether this consumer's reaction takes its key's turn in its own transaction (learnt
        # from its last ordered delivery); until then, and when it does not, a message waits for
        # its turn before the reaction runs
        self._claims = False

    def start(self) -> None:
        name = self.spec.name
        self._main = [
            asyncio.create_task(self._run(), name=f"loom-consumer {name}"),
            asyncio.create_task(self._keep_alive(), name=f"loom-consumer-keepalive {name}"),
        ]

    def tasks(self) -> list[asyncio.Task[None]]:
        return [*self._main, *self._lane_tasks]

    # -- fetching ---------------------------------------------------------------------------
    async def _run(self) -> None:
        owner, link = self._owner, self.consumed.link
        failures = 0
        while not owner.stopping:
            room = owner.max_in_flight - self.held
            if room <= 0:
                self.room.clear()
                await self.room.wait()
                continue
            started = time.monotonic()
            try:
                await link.open()
                got = await link.transport.fetch(
                    self.spec, batch=min(room, owner.batch), timeout=owner.fetch_timeout
                )
            except Exception as exc:  # noqa: BLE001 - the loop outlives any broker trouble
                failures += 1
                self._error(exc, attempt=failures)
                await self._sleep(failure_pause(failures, 1.0))
                continue
            failures = 0
            if owner.crashed:  # a dead process settles nothing
                return
            if owner.stopping:  # fetched while stopping: give them back at once
                for received in got:
                    await self._quietly(received.retry(0))
                return
            if not got:
                self.last_empty = started
            for received in got:
                self._take(received)

    async def _sleep(self, seconds: float) -> bool:
        """Sleep, cut short when the service stops; answers whether it is stopping."""
        if not self._owner.stopping:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._owner.stopped.wait(), timeout=seconds)
        return self._owner.stopping

    def _take(self, received: Received) -> None:
        self.held += 1
        try:
            message = received.message
        except MalformedMessage as bad:
            self._spawn(self._reject(received, bad), f"loom-reject {self.spec.name}")
            return
        key = message.key
        held = (received, order_of(self.spec.name, self.spec.event_types, message))
        lane = self._lanes.get(key)
        if lane is not None:
            _queue(lane, held)
            return
        self._lanes[key] = deque([held])
        self._spawn(self._drive(key), f"loom-lane {self.spec.name} {key}")

    def _spawn(self, work: Awaitable[None], name: str) -> None:
        task = asyncio.ensure_future(work)
        task.set_name(name)
        self._lane_tasks.add(task)
        task.add_done_callback(self._lane_tasks.discard)

    def _count_dead(self) -> None:
        """A message dead-lettered before any reactor ran (no Loom relay wrote it, or it names
        no tenant where one is due) counts as dead-lettered for each of the consumer's reactors."""
        metrics = self._service.events.metrics
        for sub in self.consumed.subs:
            metrics.delivered(self.spec.channel, sub.name, DEAD_LETTERED)

    async def _reject(self, received: Received, bad: MalformedMessage) -> None:
        """A message no Loom relay wrote (its metadata is missing): dead-lettered at once, as
        no attempt could apply it, with what the broker held, and acked; the loop goes on."""
        headers = bad.headers
        message = Message(
            event_id=headers.get(wire.HEADER_EVENT_ID, ""),
            event_type=headers.get(wire.HEADER_EVENT_TYPE, ""),
            channel=self.spec.channel,
            payload=bad.payload,
            occurred_at=headers.get(wire.HEADER_OCCURRED_AT, ""),
        )
        settled = False
        try:
            attempt = max(received.delivered, 1)
            await self._dead_letter(message, f"{self.spec.name}: {bad}", attempt, None)
            self._count_dead()
            await self._quietly(received.ack_nowait())
            settled = True
        except _Stopped:
            await self._quietly(received.retry(0))
        finally:
            self.held -= 1
            self._owner.handled += settled
            self.room.set()

    async def _keep_alive(self) -> None:
        """Every third of `ack_wait`, tell the broker each held message is still being worked on
        (one in its retry backoff, and the later ones of its key waiting behind it)."""
        interval = self.consumed.link.transport.ack_wait / 3
        while not await self._sleep(interval):
            for lane in list(self._lanes.values()):
                for received, _ in list(lane):
                    await self._quietly(received.in_progress())

    # -- one key's messages, in order ---------------------------------------------------------
    async def _drive(self, key: str) -> None:
        lane = self._lanes[key]
        try:
            while lane and not self._owner.crashed:
                received, order = lane[0]
                try:
                    if self._service.tracer is None:  # untraced: one coroutine fewer per message
                        await self._apply(received, order)
                    else:
                        await self._traced(received, order)
                except _Stopped:
                    for waiting, _ in list(lane)[1:]:
                        await self._quietly(waiting.retry(0))
                    return
                lane.popleft()
                self.held -= 1
                self._owner.handled += 1
                self.room.set()
        except _Crash:
            return
        finally:
            if self._owner.crashed or self._owner.stopping:
                self.held -= len(lane)
                lane.clear()
            if not lane:
                self._lanes.pop(key, None)

    async def _traced(self, received: Received, order: KeyOrder | None) -> None:
        """`_apply` in the span of the message's processing."""
        tracer = self._service.tracer
        assert tracer is not None
        message = received.message
        with tracer.process(self.consumed.link.transport.kind, message, self.spec.name):
            if received.delivered > 1:
                tracer.event("redelivered", {"messaging.delivery.attempt": received.delivered})
            await self._apply(received, order)

    async def _apply(self, received: Received, order: KeyOrder | None) -> None:
        """Apply one message in its key's turn (retrying in place), dead-letter it past
        `max_attempts`, ack it."""
        consumed, bus = self.consumed, self._service.events
        channel, message = consumed.channel, received.message
        attempt = max(received.delivered, 1)
        refusal = self._untenanted(message)
        if refusal:
            await self._dead_letter(message, f"{self.spec.name}: {refusal}", attempt, order)
            self._count_dead()
            await self._quietly(received.ack_nowait())
            return
        while True:
            if order is not None and not self._claims and not order.forced:
                # a handler that takes no turn in its transaction (no `service.reaction()`, as
                # a projection) waits here for the earlier events, before it runs
                await self._await_turn(received, order)
            try:
                envelope = _envelope(bus.decode_stored, message)
            except Undeliverable as exc:
                fields = {**row_fields(message), "attempt": attempt, "error": str(exc)}
                log_fact(
                    "event_undeliverable", logging.ERROR, {"handler": self.spec.name, **fields}
                )
                errors = [f"{self.spec.name}: {exc}"]
            else:
                errors = await bus.deliver(
                    envelope, consumed.subs, channel=channel.name, attempt=attempt, order=order
                )
                if order is not None and order.blocked:  # an earlier event is not applied yet
                    order.blocked = False
                    await self._await_turn(received, order)
                    continue
            if not errors:
                if order is not None:
                    await self._applied(message, order)
                self._owner.crash_point()
                if self._owner.crashed:  # another consumer of this process "died" meanwhile
                    raise _Crash("commit")
                await self._quietly(received.ack_nowait())
                return
            error = "; ".join(errors)[:MAX_ERROR]
            dead = attempt >= channel.max_attempts
            bus.metrics.failed(channel.name, errors, DEAD_LETTERED if dead else RETRIED)
            if dead:
                note("dead_lettered", {"messaging.delivery.attempt": attempt})
                await self._dead_letter(message, error, attempt, order)
                await self._quietly(received.ack_nowait())
                return
            delay = channel.backoff.delay(attempt)
            note("retry_scheduled", {"messaging.delivery.attempt": attempt})
            fields = {**row_fields(message), "attempt": attempt, "error": error}
            retry_at = clock.now() + delay
            log_fact("retry_scheduled", logging.WARNING, {**fields, "retry_at": retry_at})
            if await self._sleep(delay.total_seconds()):
                await self._quietly(received.retry(0))
                raise _Stopped
            attempt += 1

    def _untenanted(self, message: Message) -> str:
        """Why a message without a tenant cannot be applied by this consumer ("" when it can):
        a reaction of a tenanted context runs in the event's tenant, and a message from a foreign
        or older producer that has none is dead-lettered at once, never applied unscoped (nor
        retried: no attempt can give it one)."""
        if message.tenant is not None:
            return ""
        mine = self._tenanted_contexts()
        if not mine:
            return ""
        return (
            f"the message has no {wire.HEADER_TENANT} header, and its consumer belongs to "
            f"tenanted context {', '.join(mine)}, which applies an event in its tenant only "
            "(a Loom relay sends every tenanted context's event with one)"
        )

    def _tenanted_contexts(self) -> list[str]:
        """The tenanted contexts of this consumer's reactions, worked out once per set of
        tenanted contexts the service serves (not once a message)."""
        served = self._service.tenanted
        if self._tenanted_for is not served:
            # a consumer name is `<Context>.<Workflow>.…` (docs/events.md)
            contexts = {s.name.split(".", 1)[0] for s in self.consumed.subs}
            self._tenanted_for, self._tenanted = served, sorted(contexts & served)
        return self._tenanted

    async def _await_turn(self, received: Received, order: KeyOrder) -> None:
        """Until every earlier event of the message's key is applied (polled with reads, not
        transactions), or `gap_limit` passed (then `order.forced`, logged `event_order_gap`);
        `_Stopped`, the message given back, when the service stops meanwhile."""
        if order.first:  # nothing before it to wait for: no read
            return
        service, limit, message = self._service, self._owner.gap_limit, received.message
        pause, deadline = 0.005, time.monotonic() + limit
        while True:
            try:
                async with service.engine.connect() as conn:
                    missing = order.missing(await applied(conn, order))
            except Exception as exc:  # noqa: BLE001 - the reaction's transaction checks again
                self._error(exc, **row_fields(message))
                missing = {}
            if not missing:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                order.forced = True
                fields = {**row_fields(message), "handler": self.spec.name, "key": order.key}
                fields.update(missing=missing, waited=limit)
                log_fact("event_order_gap", logging.WARNING, fields)
                return
            if await self._sleep(min(pause, left)):
                await self._quietly(received.retry(0))
                raise _Stopped
            pause = min(pause * 2, 0.05)

    async def _applied(self, message: Message, order: KeyOrder) -> None:
        """After a successful delivery: log a late one; record the progress of a reaction that
        recorded none (one that skipped it as a duplicate, or a handler that opened no
        `service.reaction()`), in a transaction of its own."""
        if order.late:
            fields = {**row_fields(message), "handler": self.spec.name, "key": order.key}
            log_fact("event_applied_late", logging.WARNING, fields)
        self._claims = order.recorded
        if not order.recorded:
            dialect = self._service.dialect
            await self._write(message, lambda conn: record_progress(conn, dialect, order))

    async def _dead_letter(
        self, message: Message, error: str, attempt: int, order: KeyOrder | None
    ) -> None:
        """Write the dead row, and count it as applied in its key's order (a poisoned event never
        blocks its key)."""
        dialect = self._service.dialect
        row = _dead_row(message, error, attempt)

        async def write(conn: AsyncConnection) -> None:
            await write_dead_letter(conn, dialect, row)
            if order is not None:
                await record_progress(conn, dialect, order)

        await self._write(message, write)
        fields = {**row_fields(message), "attempt": attempt, "error": error}
        log_fact("event_dead_lettered", logging.ERROR, {"handler": self.spec.name, **fields})

    async def _write(
        self, message: Message, write: Callable[[AsyncConnection], Awaitable[object]]
    ) -> None:
        """Run `write` in a transaction, retrying while the database fails (the message stays
        held)."""
        failures = 0
        while True:
            try:
                async with self._service.transaction() as work:
                    await write(await work.connection())
                return
            except Exception as exc:  # noqa: BLE001 - keep the message until it is written
                failures += 1
                self._error(exc, **row_fields(message), attempt=failures)
                if await self._sleep(failure_pause(failures, 1.0)):
                    raise _Stopped from None

    async def _quietly(self, call: Awaitable[None]) -> None:
        """Settle a message; when the broker cannot take it, the message comes back after its
        `ack_wait` (an ack lost so is a redelivery the inbox skips)."""
        try:
            await call
        except Exception as exc:  # noqa: BLE001 - the broker redelivers what it did not take
            self._error(exc)

    def _error(self, exc: Exception, **fields: Any) -> None:
        """One `consumer_error` line: what failed, for this consumer; it retries."""
        line = {"handler": self.spec.name, "channel": self.spec.channel, **fields}
        line.update(error=f"{type(exc).__name__}: {exc}", broker=self.consumed.link.name)
        log_fact("consumer_error", logging.ERROR, line)


# a message held by a lane, with its place in its key's order (None: applied as it comes)
_Held = tuple[Received, KeyOrder | None]


def _queue(lane: deque[_Held], held: _Held) -> None:
    """Add `held` to its lane in key order: behind the message being worked on (the first) and
    every one not after it; a message without order goes last, as fetched."""
    order = held[1]
    if order is not None and lane:
        for index in range(len(lane) - 1, 0, -1):
            ahead = lane[index][1]
            if ahead is None or ahead.position <= order.position:
                lane.insert(index + 1, held)
                return
        lane.insert(1, held)
        return
    lane.append(held)


def _envelope(decode: Callable[..., EventEnvelope], message: Message) -> EventEnvelope:
    try:
        event_id = UUID(message.event_id)
        occurred_at = datetime.fromisoformat(message.occurred_at)
    except ValueError as exc:
        raise Undeliverable(f"the message's metadata is malformed: {exc}") from None
    return decode(
        event_id=event_id,
        event_type=message.event_type,
        payload=message.payload,
        occurred_at=occurred_at,
        correlation_id=message.correlation_id or message.event_id,
        causation_id=message.causation_id,
        model_revision=message.model_revision,
        tenant=message.tenant,
    )


def _dead_row(message: Message, error: str, attempt: int) -> dict[str, Any]:
    """The outbox row of a dead-lettered message (a malformed id or time is replaced, and the
    error says so)."""
    now = clock.now()
    try:
        event_id = UUID(message.event_id)
    except ValueError:
        event_id = new_id()
        error = f"{error} (the message's event id was {message.event_id!r})"[:MAX_ERROR]
    try:
        occurred_at = datetime.fromisoformat(message.occurred_at)
    except ValueError:
        occurred_at = now
    return {
        "event_id": event_id,
        "channel": message.channel,
        "event_type": message.event_type,
        "payload": message.payload,
        "correlation_id": message.correlation_id or str(event_id),
        "causation_id": message.causation_id,
        "occurred_at": occurred_at,
        "available_at": now,
        "attempts": attempt,
        "status": DEAD,
        "last_error": error,
        "claimed_by": None,
        "claimed_until": None,
        "delivered_at": None,
        "model_revision": message.model_revision,
        "tenant": message.tenant,
        "trace_context": message.trace_context,
    }
