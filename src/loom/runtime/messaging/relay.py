"""The outbox relay: claims due rows, delivers each to every subscribed handler, marks the outcome.

One round: claim a batch in a short transaction (PostgreSQL `FOR UPDATE SKIP LOCKED`, SQLite under
the service's writer lock and `BEGIN IMMEDIATE`), setting a lease (claimed_by, claimed_until);
deliver the rows in event order, outside any relay transaction (the rows of channels on a broker,
produced by this deployable, are then published, pipelined: `messaging/publisher.py`); then, in one more short
transaction, delete (retention work) or mark delivered (retention log) the rows that succeeded and
reschedule or dead-letter the ones that failed. Every mark is guarded by `claimed_by`, so a relay
that lost its lease changes nothing. A relay that dies between claim and mark leaves rows whose
lease expires; another round re-claims them and the inbox skips what was already applied.

Rows this process commits skip the claim: while the relay runs, a unit of work writes its outbox
rows already leased to it, and hands them to it in memory once they committed (`hand_over`); the
relay delivers them as it would claimed rows, with no claim statement and no decoding. While it
knows of a backlog of due rows of its own (at start, rows it released, more handed rows than it
holds), commits write their rows due instead, until a claim comes back short, so a handed row does
not overtake the due rows before it (but for the row of a transaction still open at that claim;
broker consumers keep per-key order by the key counts regardless). A process killed with rows
handed leaves them leased, like a relay killed between claim and mark.

Wake-ups: a handed row wakes its relay; on PostgreSQL a LISTEN connection wakes it on every other
replica's commit of due rows; polling is the fallback. Any error of a round
(a dropped connection included) is logged as `relay_error` and retried with backoff: it never ends
the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import bindparam, delete, update
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.runtime.messaging.brokers import BrokerLink, Brokers
from loom.runtime.messaging.channels import Channel, channel_named
from loom.runtime.messaging.claimant import claimant_name, failure_pause, guarded_work, stop_loop
from loom.runtime.messaging.events import EventBus, EventEnvelope, Undeliverable
from loom.runtime.messaging.listen import Listener
from loom.runtime.messaging.outbox import (
    DELIVERED,
    HandedRow,
    Lease,
    outbox,
    outbox_queue,
    row_fields,
)
from loom.runtime.messaging.publisher import Publisher
from loom.runtime.storage.hosts import UnitHost
from loom.runtime.storage.lease import MAX_ERROR
from loom.runtime.values import clock
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.environment import env_number
from loom.runtime.values.logs import log_fact
from loom.runtime.values.metrics import DEAD_LETTERED, RETRIED
from loom.runtime.values.trace_context import LOCAL_SYSTEM


class RelayHost(UnitHost, Protocol):
    """What the relay needs of the service: its units of work, engine, channels, brokers and
    event bus (to decode stored events and deliver in-process)."""

    @property
    def engine(self) -> AsyncEngine: ...

    @property
    def channels(self) -> Sequence[Channel]: ...

    @property
    def channels_by_name(self) -> Mapping[str, Channel]: ...

    @property
    def brokers(self) -> Brokers: ...

    @property
    def events(self) -> EventBus: ...


_DELETE_DONE = delete(outbox).where(outbox_queue.held)
_LOG_DONE = (
    update(outbox)
    .where(outbox_queue.held)
    .values(status=DELIVERED, delivered_at=bindparam("at"), claimed_by=None, claimed_until=None)
)


# handed rows a relay holds in memory at most, in batches: beyond, commits write their rows due
# (a relay that falls behind stops taking more from memory than it can work off soon)
HELD_BATCHES = 10


class _Crash(Exception):
    """A simulated process crash (`Faults.crash_relay`): the relay stops without marking."""


ENV_LEASE = "LOOM_RELAY_LEASE"


def resolve_relay_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """`options`, with the lease from LOOM_RELAY_LEASE (seconds) when they name none. A shorter
    lease lets rows a killed replica had claimed be claimed again sooner; it must stay longer
    than a batch takes to deliver, or two relays deliver it (the inbox still applies it once)."""
    resolved = dict(options or {})
    if "lease" not in resolved:
        seconds = env_number(ENV_LEASE, float, "a positive number of seconds", lambda s: s > 0)
        if seconds is not None:
            resolved["lease"] = timedelta(seconds=seconds)
    return resolved


class Relay:
    """`service.relay`. Options: poll_interval (s, the fallback when nothing wakes it),
    batch_size (rows per claim), lease (how long a claim is exclusive), listen (PostgreSQL
    LISTEN/NOTIFY), name (the claimed_by stamp; unique per relay by default), linger (s: under
    a steady stream, how long to let rows gather before the next claim; 0: never)."""

    def __init__(
        self,
        service: RelayHost,
        *,
        poll_interval: float = 2.0,
        batch_size: int = 100,
        lease: timedelta = timedelta(seconds=60),
        listen: bool = True,
        name: str | None = None,
        linger: float = 0.005,
    ) -> None:
        if batch_size < 1 or poll_interval <= 0 or lease <= timedelta(0) or linger < 0:
            raise ValueError(
                "relay: batch_size, poll_interval and lease must be positive, linger not negative"
            )
        self._service = service
        self.poll_interval = poll_interval
        self.batch_size = batch_size
        self.lease = lease
        self.linger = linger
        self.name = name or claimant_name()
        self._listen = listen and service.dialect == "postgresql"
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._listener: Listener | None = None
        self._stopping = False
        self._next_retry: datetime | None = None
        self._publisher = Publisher()
        self._blocked: set[str] = set()  # the brokers that refused a publish in the last round
        # rows committed by this process, leased to this relay, in commit order (`hand_over`)
        self._handed: list[HandedRow] = []
        # rows may be due in the table (a NOTIFY, a poll, a retry): a claim is to run
        self._due = True
        # rows committed before the ones commits would hand over now are due (at start, rows
        # released, a full hand): commits write theirs due until a claim comes back short
        self._backlog = True
        # rows delivered by every round so far (`loom.testing.settle_all` watches it)
        self.processed = 0
        # the last round left rows because their broker refused a publish
        self.publish_blocked = False

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def listening(self) -> bool:
        """PostgreSQL: the LISTEN connection is up."""
        return self._listener is not None and self._listener.listening

    async def wait_listening(self) -> None:
        """Until the LISTEN connection is (back) up; at once when there is none to wait for."""
        if self._listener is not None:
            await self._listener.wait_listening()

    def wake(self) -> None:
        """Something may be due: run a round now (no-op when the relay is not running)."""
        self._due = True
        self._wake.set()

    def wake_local(self) -> None:
        """A commit of this service wrote due outbox rows. While LISTEN is up, its NOTIFY wakes
        the relay anyway: waking now too would cost an extra, empty round."""
        self._due = True
        if not self.listening:
            self._wake.set()

    def lease_for_commit(self) -> Lease | None:
        """The lease a commit of this process stamps on the outbox rows it writes, to hand them
        over after it (`hand_over`); None while the relay is not running, cannot publish, or
        holds as many handed rows as it takes: the rows are then written due, for a claim."""
        if not self.running or self._stopping or self.publish_blocked or self._backlog:
            return None
        if len(self._handed) >= HELD_BATCHES * self.batch_size:
            self._backlog = self._due = True
            return None
        return self.name, clock.now() + self.lease

    def hand_over(self, rows: Sequence[HandedRow]) -> None:
        """`rows`, written with `lease_for_commit`'s lease, were committed: deliver them."""
        self._handed.extend(rows)
        self._wake.set()

    async def start(self) -> None:
        if self.running or not self._service.channels:
            return
        self._stopping = False
        self._backlog = self._due = True  # rows committed while it was not running
        if self._listen:
            self._listener = Listener(self._service.engine.url, self.wake, self.poll_interval)
            await self._listener.start()
        self._task = asyncio.create_task(self._run(), name=f"loom-relay {self.name}")

    async def stop(self, timeout: float = 5.0) -> None:
        """Finish the round in progress (up to `timeout` seconds), then stop."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        listener, self._listener = self._listener, None
        await stop_loop(task, listener, timeout)
        await self._release_handed()

    async def settle(self) -> int:
        """Run rounds, the handed rows' first, until a claim finds nothing; answers how many rows
        were delivered."""
        total = 0
        while True:
            try:
                async with self._lock:
                    handed = bool(self._handed)
                    delivered = await (self._handed_round(False) if handed else self._round(False))
            except _Crash:
                return total
            total += delivered
            if not handed and not delivered:
                return total

    # -- the loop ---------------------------------------------------------------------------
    async def _run(self) -> None:
        failures = 0
        while not self._stopping:
            self._wake.clear()
            try:
                async with self._lock:
                    delivered, more = await self._next_round()
                failures = 0
            except _Crash:
                return
            except Exception as exc:  # noqa: BLE001 - the loop outlives any database trouble
                failures += 1
                self._backlog = self._due = True
                log_fact(
                    "relay_error",
                    logging.ERROR,
                    {
                        "attempt": failures,
                        "error": f"{type(exc).__name__}: {exc}",
                        "relay": self.name,
                    },
                )
                await self._pause(failure_pause(failures, self.poll_interval))
                continue
            if self.publish_blocked:
                # the broker refused a publish: its rows were released, so try again only
                # after a pause growing with each refusal in a row (commits do not cut it short)
                await asyncio.sleep(failure_pause(self._publisher.failures, self.poll_interval))
                continue
            if more:
                await asyncio.sleep(0)  # more may be due; let requests run between batches
                continue
            if delivered and self._wake.is_set() and self.linger:
                # a steady stream (rows this round, and more committed meanwhile): let a batch
                # gather rather than pay a claim and a mark per row; an idle relay starts at once
                await asyncio.sleep(self.linger)
                continue
            # a wake-up during the round (a chain's commit, a NOTIFY) ends this pause at once
            await self._pause(self._idle_delay())

    async def _pause(self, seconds: float) -> None:
        """Wait for a wake-up, at most `seconds`."""
        if self._stopping:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)
        except TimeoutError:
            self._due = True  # a poll: rows of a dead relay's lease, retries of other replicas

    def _idle_delay(self) -> float:
        """Until the earliest retry this relay scheduled, at most the poll interval. (Retries
        other replicas scheduled, and leases of dead relays, are found by polling.)"""
        wait = self.poll_interval
        retry = self._next_retry
        if retry is not None:
            left = (retry - clock.now()).total_seconds()
            if left <= 0:
                self._next_retry = None
                self._due = True
                return 0.0
            wait = min(wait, left)
        return wait

    # -- one round --------------------------------------------------------------------------
    async def _next_round(self) -> tuple[int, bool]:
        """The loop's round: the handed rows (older than any due row the relay knows of, which
        commits write while it knows of some), else a claim when rows may be due. Answers how
        many rows were delivered, and whether more are waiting."""
        if self._handed:
            delivered = await self._handed_round(in_loop=True)
        elif self._due:
            delivered = await self._round(in_loop=True)
        else:
            return 0, False
        return delivered, self._due or bool(self._handed)

    async def _round(self, in_loop: bool = False) -> int:
        """Claim, deliver (and publish), mark; answers how many rows were delivered (0: nothing
        was due, or nothing could be delivered, so a caller looping on it always ends)."""
        self._due = False  # before the claim: a wake-up during it sets it again
        rows, until = await self._claim()
        if len(rows) >= self.batch_size:
            self._due = True  # a full batch: more may be due
        else:
            self._backlog = False  # every due row committed so far is claimed
        return await self._work(rows, until, in_loop)

    async def _handed_round(self, in_loop: bool) -> int:
        """Deliver (and publish), mark a batch of the handed rows, in event order."""
        batch, self._handed = self._handed[: self.batch_size], self._handed[self.batch_size :]
        batch.sort(key=lambda r: r.event_id)
        return await self._work(batch, min(r.claimed_until for r in batch), in_loop)

    async def _release_handed(self) -> None:
        """A stopped relay gives the rows handed to it back to the queue, for the next relay to
        claim at once (if the database cannot be reached, their lease runs out instead)."""
        handed, self._handed = self._handed, []
        if handed:
            with contextlib.suppress(Exception):
                await self._mark([], handed)  # released as a round's rows left undelivered

    async def _work(self, rows: Sequence[Any], until: datetime, in_loop: bool) -> int:
        """Deliver `rows` (claimed or handed, leased until `until`), publish them, mark them."""
        if not rows:
            return 0
        self._crash_point("claim")

        def may_go() -> bool:  # never deliver on an expired lease: another relay may hold it
            return not (in_loop and self._stopping) and clock.now() < until

        outcomes: list[tuple[Any, list[str]]] = []
        left: list[Any] = []
        # per broker: its rows delivered here, to publish (with their local outcome)
        publishing: dict[str, tuple[BrokerLink, list[tuple[Any, DomainEvent, list[str]]]]] = {}
        refused: set[str] = set()  # brokers that refused a publish this round
        probing = set(self._blocked)  # brokers that refused one last round: probe them first
        brokers = self._service.brokers
        for row in rows:
            if not may_go():
                left.append(row)
                continue
            channel = channel_named(self._service.channels_by_name, row.channel)
            link = brokers.publishing(channel, row.event_type)
            if link is not None and link.source in refused:
                left.append(row)
                continue
            envelope, error = self._decode(row)
            if envelope is None:
                outcomes.append((row, [error]))
                continue
            # this deployable's own reactions first: a reaction of another deployable, and the
            # answer it sends back, must not overtake them (the shop's payment deadline is armed
            # by Orders' own reaction to OrderPlaced, before Payment may answer it)
            errors = await self._deliver(row, envelope)
            if link is None:
                outcomes.append((row, errors))
                continue
            _, pending = publishing.setdefault(link.source, (link, []))
            pending.append((row, envelope.event, errors))
            if link.source in probing:
                # the broker refused the last round: publish one row before delivering the
                # others here again (the inbox would skip them, at a transaction each)
                probing.discard(link.source)
                publishing.pop(link.source)
                if not await self._publish(link, pending, outcomes, left, may_go):
                    refused.add(link.source)
        for link, pending in publishing.values():
            if not await self._publish(link, pending, outcomes, left, may_go):
                refused.add(link.source)
        self._blocked = refused
        self.publish_blocked = bool(refused)
        self._crash_point("deliver")
        self._crash_point("publish")
        if left:
            self._backlog = self._due = True  # released by the mark: due again
        await self._mark(outcomes, left)
        self.processed += len(outcomes)
        return len(outcomes)

    async def _publish(
        self,
        link: BrokerLink,
        pending: list[tuple[Any, DomainEvent, list[str]]],
        outcomes: list[tuple[Any, list[str]]],
        left: list[Any],
        may_go: Callable[[], bool],
    ) -> bool:
        """Publish `pending` to `link`'s broker: an acked row's outcome is its local one, a row
        not acked is left (delivered again later: the inbox skips what applied). Answers whether
        the broker took every row it was sent."""
        service = self._service
        acked = await self._publisher.publish(
            link, [(r, e) for r, e, _ in pending], may_go, service.events.metrics, service.tracer
        )
        for (row, _, errors), ok in zip(pending, acked, strict=True):
            if ok:
                outcomes.append((row, errors))
            else:
                left.append(row)
        return all(acked) or not may_go()

    async def _claim(self) -> tuple[list[Any], datetime]:
        """The claimed rows in event order (RETURNING has none), and the lease's end."""
        service = self._service
        now = clock.now()
        until = now + self.lease
        params = {"now": now, "n": self.batch_size, "me": self.name, "until": until}
        async with guarded_work(service) as work:
            conn = await work.connection()
            rows = (await conn.execute(outbox_queue.claim(service.dialect), params)).all()
        return sorted(rows, key=lambda r: r.event_id), until

    def _crash_point(self, point: str) -> None:
        faults = self._service.faults
        if faults.relay_crash == point:
            faults.relay_crash = None
            log_fact("relay_crashed", logging.ERROR, {"after": point, "relay": self.name})
            raise _Crash(point)

    def _decode(self, row: Any) -> tuple[EventEnvelope | None, str]:
        """The row's envelope, or None and why it cannot be decoded (logged)."""
        if isinstance(row, HandedRow):
            return row.envelope, ""
        try:
            envelope = self._service.events.decode_stored(
                event_id=row.event_id,
                event_type=row.event_type,
                payload=row.payload,
                occurred_at=row.occurred_at,
                correlation_id=row.correlation_id,
                causation_id=row.causation_id,
                model_revision=row.model_revision,  # NULL in a row written before rows had one
                tenant=row.tenant,
            )
        except Undeliverable as exc:
            fields = {**row_fields(row), "attempt": row.attempts + 1, "error": str(exc)}
            log_fact("event_undeliverable", logging.ERROR, fields)
            return None, str(exc)
        return envelope, ""

    async def _deliver(self, row: Any, envelope: EventEnvelope) -> list[str]:
        bus = self._service.events
        subs = bus.handlers_for(type(envelope.event))
        if not subs:  # only published: no dispatch here to log (a line per event saved)
            return []
        tracer = self._service.tracer
        if tracer is None:
            return await bus.deliver(envelope, subs, channel=row.channel, attempt=row.attempts + 1)
        with tracer.process(LOCAL_SYSTEM, row):
            if row.attempts:
                tracer.event("retried", {"messaging.delivery.attempt": row.attempts + 1})
            return await bus.deliver(envelope, subs, channel=row.channel, attempt=row.attempts + 1)

    async def _mark(self, outcomes: Sequence[tuple[Any, list[str]]], left: list[Any]) -> None:
        service = self._service
        now = clock.now()
        done_work: list[Any] = []
        done_log: list[Any] = []
        lines: list[tuple[str, int, dict[str, Any]]] = []
        async with guarded_work(service) as work:
            conn = await work.connection()
            for row, errors in outcomes:
                channel = channel_named(service.channels_by_name, row.channel)
                if not errors:
                    (done_log if channel.retention == "log" else done_work).append(row.event_id)
                    continue
                attempts = row.attempts + 1
                error = "; ".join(errors)[:MAX_ERROR]
                params: dict[str, Any] = {
                    "id": row.event_id,
                    "me": self.name,
                    "attempts": attempts,
                    "error": error,
                }
                fields = {**row_fields(row), "attempt": attempts, "error": error}
                dead = attempts >= channel.max_attempts
                service.events.metrics.failed(
                    row.channel, errors, DEAD_LETTERED if dead else RETRIED
                )
                if dead:
                    result = await conn.execute(outbox_queue.kill, params)
                    line = ("event_dead_lettered", logging.ERROR, fields)
                else:
                    params["at"] = at = now + channel.backoff.delay(attempts)
                    result = await conn.execute(outbox_queue.retry, params)
                    line = ("retry_scheduled", logging.WARNING, {**fields, "retry_at": at})
                    earliest = self._next_retry
                    if earliest is None or earliest <= now or at < earliest:
                        self._next_retry = at
                if result.rowcount == 1:  # else the lease was lost: the new holder decides
                    lines.append(line)
            if done_work:
                await conn.execute(_DELETE_DONE, {"ids": done_work, "me": self.name})
            if done_log:
                await conn.execute(_LOG_DONE, {"ids": done_log, "me": self.name, "at": now})
            if left:
                await conn.execute(
                    outbox_queue.release, {"ids": [r.event_id for r in left], "me": self.name}
                )
        for fact, level, fields in lines:
            log_fact(fact, level, fields)
