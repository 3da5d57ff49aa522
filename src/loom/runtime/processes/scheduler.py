"""The scheduler: fires due timeouts and context-timer ticks, inside the service, like the relay.

A round: claim up to `batch_size` due timeouts
in one short statement that stamps a lease (`claimed_by`, `claimed_until`): on PostgreSQL with
`FOR UPDATE SKIP LOCKED`, so replicas claim disjoint batches; on SQLite under the service's writer
lock and `BEGIN IMMEDIATE`. Each claimed timeout then runs in a transaction of its own:

1. the row is read again, still armed and still ours: a timeout disarmed or replaced since the
   claim is skipped (`timeout_stale`);
2. the process's handler runs, as the system principal (of the timeout's tenant, for a tenanted
   context's process), with the arming step's correlation id;
3. the row is deleted, in the same transaction: it is consumed if and only if the handler
   committed.

Then the round runs the due context-timer ticks (`processes.recurring.TickRunner`): the precise timeout
first, the sweep (its safety net) after.

A handler that raises rolls back; the row's `attempts` grows and it waits `backoff.delay(attempt)`
(`timeout_retry_scheduled`), or at `max_attempts` it becomes dead (`timeout_dead_lettered`), listed
and redriven like outbox dead letters. A refusal (a `when` gate, a precondition, an invariant, a
`requires` gate: `DECISIONS`) is dead at once: retried, it would be refused again. A scheduler that dies mid-batch leaves rows leased; once the
lease expires another claims them: delivery is at least once (a runner step checks the job is
still armed, in its own transaction, so a consumed timeout is never applied twice).

Wake-ups: after each round the scheduler sleeps until the earliest armed timeout or tick, at most
`poll_interval`; a step of this service that arms an earlier timeout wakes it (`expect`). On
PostgreSQL a step that arms a timeout due within `announce_within` also announces it
(`pg_notify('loom_timers', …)`, in its transaction, so only a commit is heard), and every
scheduler LISTENs: a replica sleeping past that instant wakes by then (`expect`). A later timeout
needs no announcement: every replica's next poll finds it stored and sleeps until it is due. When
LISTEN is down (or off, or on SQLite), timeouts armed by another replica are found at the next poll.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import bindparam, or_, select, update

from loom.runtime.messaging.claimant import claimant_name, failure_pause, guarded_work, stop_loop
from loom.runtime.messaging.listen import Listener
from loom.runtime.processes.fired import consume, consumer_of
from loom.runtime.processes.model import TimeoutDue
from loom.runtime.processes.recurring import TickHost, TickRunner
from loom.runtime.processes.tables import ARMED, timers
from loom.runtime.processes.timers import (
    TIMERS_CHANNEL,
    TimeoutHandlers,
    TimerQueue,
    _fields,
    parse_announcement,
    tenant_of_row,
    timer_queue,
)
from loom.runtime.storage.journal import Step
from loom.runtime.storage.lease import MAX_ERROR
from loom.runtime.values import clock
from loom.runtime.values.errors import Forbidden, Refused
from loom.runtime.values.ids import new_id
from loom.runtime.values.logs import log_fact, use_correlation_id
from loom.runtime.values.principal import system_of, use_principal


class SchedulerHost(TickHost, Protocol):
    """What the scheduler needs of the service: what running context timers needs, the handlers
    of its processes' timeouts, the queue of armed ones, and whether it uses processes at all."""

    @property
    def timeouts(self) -> TimeoutHandlers: ...

    @property
    def timers(self) -> TimerQueue: ...

    @property
    def uses_processes(self) -> bool: ...

    @property
    def channels(self) -> Sequence[object]:
        """Its durable channels: with any, it keeps an inbox, where a fired timeout is recorded."""
        ...


t = timers.c
_STILL_MINE = select(t.job_id).where(timer_queue.held_one, t.status == ARMED)
# a handler's refusals: decisions over the state it read, made again on any retry (a 409 conflict,
# a database error or a failed API call may go the other way next time, and are retried)
DECISIONS = (Refused, Forbidden)
_RECHECK = 0.02  # s: a second look at an expected timeout the first claim did not find
# an operator's "fire this one now": the lease of one armed timeout, due or not, that no live
# lease holds (so it and a scheduler's claim exclude each other, as two schedulers' claims do)
_CLAIM_ONE = (
    update(timers)
    .where(
        t.job_id == bindparam("id"),
        t.status == ARMED,
        or_(t.claimed_until.is_(None), t.claimed_until <= bindparam("now")),
    )
    .values(claimed_by=bindparam("me"), claimed_until=bindparam("until"))
    .returning(t.job_id, t.process, t.tenant, t.key, t.name, t.due_at, t.attempts, t.correlation_id)
)
_ARMED = select(t.job_id).where(t.job_id == bindparam("id"), t.status == ARMED)
_UNKNOWN = object()


class Scheduler:
    """`service.scheduler`. Options: poll_interval (s: the longest sleep, and the precision for
    timeouts armed by other replicas when nothing wakes it), batch_size (timeouts per claim),
    lease (how long a claim is exclusive; longer than a batch of handlers takes), name (the
    claimed_by stamp), listen (PostgreSQL: LISTEN for the timeouts other replicas arm),
    announce_within (PostgreSQL: a step arming a timeout due sooner than this notifies the other
    replicas; keep it above every replica's poll_interval)."""

    def __init__(
        self,
        service: SchedulerHost,
        *,
        poll_interval: float = 1.0,
        batch_size: int = 50,
        lease: timedelta = timedelta(seconds=60),
        name: str | None = None,
        listen: bool = True,
        announce_within: timedelta = timedelta(minutes=5),
    ) -> None:
        if batch_size < 1 or poll_interval <= 0 or lease <= timedelta(0):
            raise ValueError("scheduler: batch_size, poll_interval and lease must be positive")
        self._service = service
        self.poll_interval = poll_interval
        self.announce_within = announce_within
        self._listen = listen and service.dialect == "postgresql"
        self._listener: Listener | None = None
        self.batch_size = batch_size
        self.lease = lease
        self.name = name or claimant_name()
        self.ticks = TickRunner(service)
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._next: datetime | None = None  # the earliest `expect`ed instant not yet seen
        self._sleeping_until: datetime | None = None
        self._rechecked: datetime | None = None
        # run_due's fixpoint: whether a round armed something already due, or claimed a full
        # batch (more may wait); otherwise a round that ran something needs no second look
        self._made_due = False
        self._full = False
        # the earliest claimable timeout of this service as `next_due` last read it (None: none
        # is armed), so a clock's step needs neither a read nor a claim before then. Forgotten
        # whenever it may have moved earlier: this service arms one (`expect`), a round
        # claims, a `run_due` without `until`, every round of the background loop (other
        # replicas arm timeouts too) and every advance of a virtual clock (`forget_timeouts`)
        self._first_timeout: datetime | object | None = _UNKNOWN

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def expect(self, at: datetime) -> None:
        """A timeout of this service is due `at`: wake up by then (at once if it already is).
        Cheap when the loop would wake by then anyway: nothing happens."""
        self._first_timeout = _UNKNOWN
        if at <= clock.now():
            self._made_due = True
        if self._next is not None and self._next <= at:
            return
        self._next = at
        sleeping = self._sleeping_until
        if sleeping is not None and at < sleeping:
            self._wake.set()

    @property
    def listening(self) -> bool:
        """PostgreSQL: the LISTEN connection is up."""
        return self._listener is not None and self._listener.listening

    def announces(self, due: datetime) -> bool:
        """Whether arming a timeout due `due` notifies the other replicas (PostgreSQL)."""
        return due - clock.now() < self.announce_within

    def _heard(self, payload: str) -> None:
        """Another replica committed a timeout (`processes.timers.announcement`): wake by its due time."""
        found = parse_announcement(payload)
        if found is not None and found[0] in self._service.timeouts.processes:
            self.expect(found[1])

    def _poke(self) -> None:
        self._wake.set()

    async def start(self) -> None:
        if self.running:
            return
        self._stopping = False
        if self._service.uses_processes:
            await self.ticks.ensure_rows()
        if self._listen and self._service.timeouts:
            url = self._service.engine.url
            self._listener = Listener(
                url,
                self._poke,
                self.poll_interval,
                channel=TIMERS_CHANNEL,
                on_payload=self._heard,
                error_fact="scheduler_error",
            )
            await self._listener.start()
        self._task = asyncio.create_task(self._run(), name=f"loom-scheduler {self.name}")

    async def stop(self, timeout: float = 5.0) -> None:
        """Finish the round in progress (up to `timeout` seconds), then stop."""
        self._stopping = True
        self._wake.set()
        task, self._task = self._task, None
        listener, self._listener = self._listener, None
        await stop_loop(task, listener, timeout)

    async def run_due(self, until: datetime | None = None) -> int:
        """Fire every timeout and tick due now, and what those handlers made due now, until a
        round finds nothing; answers how many ran. (Tests, and `VirtualClock.advance`, which
        passes `until`: it walks time to `until`, calling this at every instant due on the way,
        so a tick due now claims its successors through `until` at once, see `processes.recurring`.)"""
        if until is None:  # not a virtual clock's step: anyone may have changed the rows
            self.forget_timeouts()
            await self.ticks.refresh()
        total = 0
        while True:
            self._made_due = False
            async with self._lock:
                ran = await self._round(until)
            total += ran
            if not ran or not (self._made_due or self._full):
                return total

    async def fire_now(self, job_id: Any) -> str | None:
        """Fire one armed timeout now, due or not (an operator's `POST /api/admin/timers/{id}/fire`):
        "fired", "failed" (retried later, as any failed attempt), "stale" (disarmed meanwhile),
        "busy" (a scheduler holds it right now: it is being fired), or None (no armed timeout
        has this job id)."""
        service = self._service
        now = clock.now()
        me = f"{self.name}/fire-{new_id()}"
        self.forget_timeouts()
        params = {"id": job_id, "now": now, "me": me, "until": now + self.lease}
        async with guarded_work(service) as work:
            conn = await work.connection()
            row = (await conn.execute(_CLAIM_ONE, params)).first()
            if row is None:
                armed = (await conn.execute(_ARMED, params)).first()
                return None if armed is None else "busy"
        return await self._fire(row, me)

    async def next_due(self) -> datetime | None:
        """The earliest instant a timeout or a tick of this service becomes due (the ticks as
        this scheduler last read or claimed them, see `processes.recurring`)."""
        service = self._service
        found: list[object] = [await self.ticks.next_due()]
        if service.timeouts.processes:
            if self._first_timeout is _UNKNOWN:
                self._first_timeout = await service.timers.next_due(service.timeouts.processes)
            found.append(self._first_timeout)
        return min((x for x in found if isinstance(x, datetime)), default=None)

    def forget_timeouts(self) -> None:
        """The next `next_due` reads the stored timeouts again (anyone may have armed one)."""
        self._first_timeout = _UNKNOWN

    # -- the loop ---------------------------------------------------------------------------
    async def _run(self) -> None:
        failures = 0
        while not self._stopping:
            self._wake.clear()
            self.forget_timeouts()  # the idle read is a sleep old: claim
            try:
                async with self._lock:
                    ran = await self._round()
                    wait = 0.0 if ran >= self.batch_size else await self._idle_delay()
                if not ran:  # due but not claimable (locked, leased): never spin on it
                    wait = max(wait, _RECHECK)
                failures = 0
            except Exception as exc:  # noqa: BLE001 - the loop outlives any database trouble
                failures += 1
                fields = {"attempt": failures, "error": f"{type(exc).__name__}: {exc}"}
                log_fact("scheduler_error", logging.ERROR, {**fields, "scheduler": self.name})
                wait = failure_pause(failures, self.poll_interval)
            if self._stopping:
                return
            if wait <= 0:
                await asyncio.sleep(0)  # let requests run between batches
                continue
            self._sleeping_until = clock.now() + timedelta(seconds=wait)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=wait)
            except TimeoutError:
                pass
            finally:
                self._sleeping_until = None

    async def _idle_delay(self) -> float:
        """Until the earliest due timeout or tick (as stored now, or as `expect`ed since), at
        most the poll interval."""
        await self.ticks.refresh()  # rows another replica, or an operator, changed meanwhile
        found = await self.next_due()
        expected, self._next = self._next, None
        now = clock.now()
        if expected is not None and expected <= now and (found is None or found > now):
            # due, but not claimable yet: most likely armed by a transaction still committing
            if self._rechecked != expected:
                self._rechecked = expected
                return min(self.poll_interval, _RECHECK)
        elif expected is not None and (found is None or expected < found):
            found = expected
        if found is None:
            return self.poll_interval
        return max(0.0, min(self.poll_interval, (found - now).total_seconds()))

    # -- one round --------------------------------------------------------------------------
    async def _round(self, ahead: datetime | None = None) -> int:
        """Due timeouts first (the precise deadline), then due ticks (the sweeps)."""
        if not self._service.uses_processes:
            return 0  # no timer tables to look at
        ran = 0
        first = self._first_timeout
        if first is None or (isinstance(first, datetime) and clock.now() < first):
            self._full = False
            return await self.ticks.run_due(ahead)
        self.forget_timeouts()
        rows, until = await self._claim()
        self._full = len(rows) >= self.batch_size
        for i, row in enumerate(rows):
            if clock.now() >= until:  # never fire on an expired lease: release the rest
                await self._release([r.job_id for r in rows[i:]])
                break
            await self._fire(row)
            ran += 1
        return ran + await self.ticks.run_due(ahead)

    async def _claim(self) -> tuple[list[Any], datetime]:
        service = self._service
        now = clock.now()
        until = now + self.lease
        handled = service.timeouts.processes
        if not handled:
            return [], until
        params = {"now": now, "n": self.batch_size, "me": self.name, "until": until}
        params["processes"] = list(handled)
        async with guarded_work(service) as work:
            conn = await work.connection()
            rows = (await conn.execute(timer_queue.claim(service.dialect), params)).all()
        return sorted(rows, key=lambda r: (r.due_at, r.job_id)), until

    async def _release(self, ids: list[Any]) -> None:
        async with guarded_work(self._service) as work:
            conn = await work.connection()
            await conn.execute(timer_queue.release, {"ids": ids, "me": self.name})

    async def _fire(self, row: Any, me: str | None = None) -> str:
        """Run the handler of a timeout claimed by `me` (default: this scheduler); answers
        "fired", "stale" or "failed"."""
        service = self._service
        due = TimeoutDue(
            process=row.process,
            key=row.key,
            name=row.name,
            job_id=row.job_id,
            due_at=row.due_at,
            attempt=row.attempts + 1,
            correlation_id=row.correlation_id or str(row.job_id),
            tenant=tenant_of_row(row.tenant),
        )
        fields = {**_fields(due), "attempt": due.attempt}
        registered = service.timeouts.get(row.process)
        if registered is None:
            error = f"no timeout handler is registered for process {row.process}"
            await self._failed(due, fields, error, 1, None, me)
            return "failed"
        tracer = service.tracer
        if tracer is None:
            return await self._fire_in(row, due, fields, registered, me)
        with tracer.fired(f"timeout {row.process}.{row.name}", row.trace_context, due):
            return await self._fire_in(row, due, fields, registered, me)

    async def _fire_in(
        self, row: Any, due: TimeoutDue, fields: dict[str, Any], registered: Any, me: str | None
    ) -> str:
        service = self._service
        params = {"id": row.job_id, "me": me or self.name}
        try:
            principal = system_of(due.tenant)
            with use_correlation_id(due.correlation_id), use_principal(principal):
                work = service.transaction()
                work.step = Step(
                    "timeout",
                    consumer_of(due.process, due.name),
                    event_id=str(due.job_id),
                    correlation_id=due.correlation_id,
                )
                async with work:
                    conn = await work.connection()
                    if (await conn.execute(_STILL_MINE, params)).first() is None:
                        log_fact("timeout_stale", logging.INFO, fields)
                        return "stale"
                    await registered.handler(due, work)
                    await consume(conn, service.dialect, row, bool(service.channels))
        except Exception as exc:  # noqa: BLE001 - retried, then dead-lettered
            error = f"{type(exc).__name__}: {exc}"
            # a refusal is the model's decision over what the handler read, the same on every
            # retry: dead at once, without the backoff (a redrive runs it again, once fixed)
            backoff = None if isinstance(exc, DECISIONS) else registered.backoff
            await self._failed(due, fields, error, registered.max_attempts, backoff, me)
            return "failed"
        log_fact("timeout_fired", logging.INFO, fields)
        return "fired"

    async def _failed(
        self,
        due: TimeoutDue,
        fields: dict[str, Any],
        error: str,
        max_attempts: int,
        backoff: Any,
        me: str | None = None,
    ) -> None:
        error = error[:MAX_ERROR]
        params: dict[str, Any] = {
            "id": due.job_id,
            "me": me or self.name,
            "attempts": due.attempt,
            "error": error,
        }
        fields = {**fields, "error": error}
        async with guarded_work(self._service) as work:
            conn = await work.connection()
            if due.attempt >= max_attempts or backoff is None:
                result = await conn.execute(timer_queue.kill, params)
                line = ("timeout_dead_lettered", logging.ERROR, fields)
            else:
                params["at"] = at = clock.now() + backoff.delay(due.attempt)
                result = await conn.execute(timer_queue.retry, params)
                line = ("timeout_retry_scheduled", logging.WARNING, {**fields, "retry_at": at})
                self.expect(at)
        if result.rowcount == 1:
            log_fact(*line)
            return
        # the row is not ours any more: disarmed or replaced meanwhile (often by the very step
        # the handler lost a race to), so there is nothing to retry; or its lease was lost, and
        # the new holder decides
        async with self._service.engine.connect() as conn:
            exists = (await conn.execute(select(t.job_id).where(t.job_id == due.job_id))).first()
        if exists is None:
            log_fact("timeout_stale", logging.INFO, fields)
