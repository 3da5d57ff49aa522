"""`SqlProcessStore`: instances in `__loom_processes`, timeouts in `__loom_timers`, written on the
unit of work's connection (SQLite and PostgreSQL), so a step's state, its timers and its outbox
rows commit or roll back together.

`apply` is the step's whole write. On PostgreSQL it is one statement, whatever the decision:
the save, the timer changes and the outbox rows of the step's durable commands (when the runner
owns the transaction) are data-modifying CTEs, the timer ones gated on the save having matched
(`WHERE EXISTS (SELECT 1 FROM saved)`); a lost race raises and rolls back the rest:

    WITH saved AS (UPDATE __loom_processes SET … WHERE process = … AND version = :expected
                   RETURNING 1),
         dropped AS (DELETE FROM __loom_timers WHERE … AND name IN (…) AND EXISTS (…saved)),
         armed_0 AS (INSERT INTO __loom_timers (…) SELECT … WHERE EXISTS (…saved)
                     ON CONFLICT (process, tenant, key, name) DO UPDATE SET job_id = …, …),
         events AS (INSERT INTO __loom_outbox (…) SELECT … UNION ALL SELECT …)
    SELECT count(*),
           pg_notify('loom_timers', :wake),    -- a timer due within announce_within
           pg_notify('loom_outbox', '')        -- outbox rows
    FROM saved

The notifications wake the schedulers (`processes.timers.announcement`) and the relays of the other
replicas; the server delivers them only if the step commits. One round trip per step, as many
as the step's plain version-checked UPDATE would take.

On SQLite (no data-modifying CTEs) the same writes are separate statements under the writer
lock. Arming a name is an upsert on (process, tenant, key, name): one statement replaces the
earlier job.

A timer of a tenanted context's process workflow (one `service.processes.track`ed with a
tenanted instance table) is kept under the tenant of the step arming it (`current_tenant()`,
the tenant its request or reaction runs in); every other under `NO_TENANT`. The scheduler fires
it as the system principal of that tenant, so its handler's reads and writes are that tenant's.
"""

from __future__ import annotations

import builtins
import functools
import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    String,
    and_,
    bindparam,
    delete,
    func,
    insert,
    literal,
    literal_column,
    null,
    select,
    union_all,
    update,
)
from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.ordering import Producer, stamped_rows, write_durable
from loom.runtime.messaging.outbox import NOTIFY_CHANNEL, outbox
from loom.runtime.processes.model import Instance, PendingTimeout, Timeout
from loom.runtime.processes.store import encode_state
from loom.runtime.processes.tables import ARMED, NO_TENANT, processes, timers
from loom.runtime.processes.timers import ANNOUNCE, TIMERS_CHANNEL, announcement
from loom.runtime.storage.dialects import dialect_insert
from loom.runtime.storage.lease import ARCHIVED
from loom.runtime.storage.work import Units, Work
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.errors import ConcurrencyConflict
from loom.runtime.values.ids import new_id
from loom.runtime.values.logs import current_correlation_id
from loom.runtime.values.principal import current_tenant
from loom.runtime.values.tracing import current_stored

p, t = processes.c, timers.c
_one = and_(p.process == bindparam("w_process"), p.key == bindparam("w_key"))
_LOAD = select(processes).where(_one)
_LOAD_LOCKED = _LOAD.with_for_update()
_INSERT = insert(processes)
_UPDATE = (
    update(processes)
    .where(_one, p.version == bindparam("expected"))
    .values(
        version=bindparam("new_version"),
        state=bindparam("new_state"),
        state_version=bindparam("new_state_version"),
        ended=bindparam("new_ended"),
        updated_at=bindparam("new_updated_at"),
    )
)
_of = and_(
    t.process == bindparam("process"), t.tenant == bindparam("tenant"), t.key == bindparam("key")
)
_named = and_(_of, t.name == bindparam("name"))
_DISARM = delete(timers).where(_named)
_DISARM_ALL = delete(timers).where(_of)
_DISARM_SOME = delete(timers).where(_of, t.name.in_(bindparam("names", expanding=True)))
_ARMED = select(t.job_id).where(_named, t.status == ARMED)
_PENDING = (
    select(t.name, t.job_id, t.due_at, t.attempts, t.status, t.last_error)
    .where(_of, t.status != ARCHIVED)  # an archived dead letter was set aside by an operator
    .order_by(t.due_at, t.name)
)
_RESET = ("attempts", "status", "last_error", "claimed_by", "claimed_until")
_REARM = (
    "job_id",
    "due_at",
    "available_at",
    "correlation_id",
    "armed_at",
    "trace_context",
    *_RESET,
)


def _rearming(stmt: Any) -> Any:
    """`stmt`, an INSERT of a timer, replacing the job armed under its name instead when there
    is one (one statement)."""
    return stmt.on_conflict_do_update(
        index_elements=["process", "tenant", "key", "name"],
        set_={c: getattr(stmt.excluded, c) for c in _REARM},
    )


@functools.cache
def _upsert(dialect: str) -> Any:
    """The rearming INSERT of a timer in `dialect`, built once (its dialect's module loaded only
    for the database a service runs on: `storage.dialects`)."""
    return _rearming(dialect_insert(dialect)(timers))


def _instance(row: Any) -> Instance:
    return Instance(
        process=row.process,
        key=row.key,
        state=json.loads(row.state),
        state_version=row.state_version,
        version=row.version,
        ended=bool(row.ended),
        updated_at=row.updated_at,
    )


class Announces(Protocol):
    """The scheduler of this service: whether arming a timeout due then must tell the other
    replicas, and that one is due then."""

    def announces(self, due: datetime) -> bool: ...

    def expect(self, at: datetime) -> None: ...


class StepOutlet(Producer, Protocol):
    """The outbox side of a step: which events a channel carries, their stamped rows (as
    `messaging.ordering.Producer`), and waking the relay once they are committed."""

    @property
    def routes(self) -> Mapping[str, Channel]: ...

    def sent(self) -> None: ...


class Tracks(Protocol):
    """The process runner: which processes keep their timers per tenant."""

    @property
    def tenanted(self) -> Set[str]: ...


class ProcessHost(Units, Protocol):
    """What running process steps needs of the service."""

    @property
    def scheduler(self) -> Announces: ...

    @property
    def outlet(self) -> StepOutlet: ...

    @property
    def processes(self) -> Tracks: ...


def _timer_row(
    process: str, tenant: str, key: str, timeout: Timeout, now: datetime
) -> dict[str, Any]:
    due = timeout.due(now)
    return {
        "job_id": new_id(),
        "process": process,
        "tenant": tenant,
        "key": key,
        "name": timeout.name,
        "due_at": due,
        "available_at": due,
        "attempts": 0,
        "status": ARMED,
        "last_error": None,
        "correlation_id": current_correlation_id(),
        "armed_at": now,
        "claimed_by": None,
        "claimed_until": None,
        "trace_context": current_stored(),
    }


class SqlProcessStore:
    """The SQL store. Inside `service.transaction()` on PostgreSQL, `load` locks the instance row
    (SELECT … FOR UPDATE), so two steps of one instance queue; the version check is the safety
    net when they do not (two first steps, or a service with `lock_reads` off)."""

    def __init__(self, host: ProcessHost) -> None:
        self._host = host

    def _tenant(self, process: str) -> str:
        """The tenant the timers of `process` are kept under in this step (see the docstring)."""
        return current_tenant() if process in self._host.processes.tenanted else NO_TENANT

    async def _execute(self, work: Work, stmt: Any, params: Any, target: tuple[str, str]) -> Any:
        conn: AsyncConnection = work._conn or await work.connection()
        try:
            return await conn.execute(stmt, params)
        except (StatementError, OverflowError) as err:
            work._reraise(err, f"process {target[0]}", target[1])

    async def load(self, work: Work, process: str, key: str) -> Instance | None:
        stmt = _LOAD_LOCKED if work.lock_reads else _LOAD
        params = {"w_process": process, "w_key": key}
        row = (await self._execute(work, stmt, params, (process, key))).first()
        return None if row is None else _instance(row)

    async def apply(
        self,
        work: Work,
        instance: Instance,
        expected_version: int,
        *,
        cancel: Sequence[str] = (),
        arm: Sequence[Timeout] = (),
        clear: bool = False,
        events: Sequence[tuple[Channel, DomainEvent]] = (),
    ) -> Instance:
        """The `ProcessStore` step write; `events` (durable events of the step) get their outbox
        rows in the same write: on PostgreSQL in the one statement, with the relays' NOTIFY.
        The caller commits, then wakes its relay (`relay.wake_local()`)."""
        armed = {x.name for x in arm}
        drop = () if clear else tuple(n for n in dict.fromkeys(cancel) if n not in armed)
        tenant = self._tenant(instance.process)
        if self._host.dialect != "postgresql":
            saved = await self.save(work, instance, expected_version)
            target = (instance.process, instance.key)
            of = {"process": instance.process, "tenant": tenant, "key": instance.key}
            if clear:
                await self._execute(work, _DISARM_ALL, of, target)
            elif drop:
                await self._execute(work, _DISARM_SOME, {**of, "names": list(drop)}, target)
            if arm:
                now = instance.updated_at
                rows = [_timer_row(instance.process, tenant, instance.key, x, now) for x in arm]
                await self._execute(work, _upsert("sqlite"), rows, target)
            if events:
                conn = work._conn or await work.connection()
                await write_durable(conn, self._host.outlet, events)
            return saved
        params = _step_params(instance, tenant, expected_version, drop, arm, clear)
        earliest = min((params[f"due_{i}"] for i in range(len(arm))), default=None)
        if earliest is not None and self._host.scheduler.announces(earliest):
            params["wake"] = announcement(instance.process, earliest)
        rows = await stamped_rows(work._conn or await work.connection(), self._host.outlet, events)
        for i, row in enumerate(rows):
            params.update({f"o{i}_{c}": v for c, v in row.items()})
        shape = (expected_version == 0, len(drop), len(arm), clear, "wake" in params, len(rows))
        stmt = _step_statement(*shape)
        target = (instance.process, instance.key)
        if (await self._execute(work, stmt, params, target)).scalar() != 1:
            raise ConcurrencyConflict(f"process {instance.process}", instance.key)
        return replace(instance, version=expected_version + 1)

    async def save(self, work: Work, instance: Instance, expected_version: int) -> Instance:
        """Only the version-checked save (INSERT at version 1, else UPDATE)."""
        target = (instance.process, instance.key)
        state = encode_state(instance.state)
        saved = replace(instance, version=expected_version + 1)
        if expected_version == 0:
            row = {
                "process": saved.process,
                "key": saved.key,
                "version": 1,
                "state": state,
                "state_version": saved.state_version,
                "ended": saved.ended,
                "updated_at": saved.updated_at,
            }
            await self._execute(work, _INSERT, row, target)  # a duplicate key is a lost race
            return saved
        params = {
            "w_process": saved.process,
            "w_key": saved.key,
            "expected": expected_version,
            "new_version": saved.version,
            "new_state": state,
            "new_state_version": saved.state_version,
            "new_ended": saved.ended,
            "new_updated_at": saved.updated_at,
        }
        result = await self._execute(work, _UPDATE, params, target)
        if result.rowcount != 1:
            raise ConcurrencyConflict(f"process {saved.process}", saved.key)
        return saved

    async def arm(
        self, work: Work, process: str, key: str, timeout: Timeout, now: datetime
    ) -> UUID:
        """Arm one timeout (replacing the job armed under its name); answers its job id."""
        row = _timer_row(process, self._tenant(process), key, timeout, now)
        service = self._host
        await self._execute(work, _upsert(service.dialect), row, (process, key))
        if service.dialect == "postgresql" and service.scheduler.announces(row["due_at"]):
            wake = {"wake": announcement(process, row["due_at"])}
            await self._execute(work, ANNOUNCE, wake, (process, key))
        service.scheduler.expect(row["due_at"])  # wake this service's scheduler by then
        job_id: UUID = row["job_id"]
        return job_id

    async def disarm(self, work: Work, process: str, key: str, name: str) -> int:
        params = {"process": process, "tenant": self._tenant(process), "key": key, "name": name}
        return int((await self._execute(work, _DISARM, params, (process, key))).rowcount)

    async def disarm_all(self, work: Work, process: str, key: str) -> int:
        params = {"process": process, "tenant": self._tenant(process), "key": key}
        return int((await self._execute(work, _DISARM_ALL, params, (process, key))).rowcount)

    async def armed(self, work: Work, process: str, key: str, name: str) -> UUID | None:
        params = {"process": process, "tenant": self._tenant(process), "key": key, "name": name}
        found: UUID | None = (
            await self._execute(work, _ARMED, params, (process, key))
        ).scalar_one_or_none()
        return found

    async def pending(self, work: Work, process: str, key: str) -> builtins.list[PendingTimeout]:
        params = {"process": process, "tenant": self._tenant(process), "key": key}
        rows = (await self._execute(work, _PENDING, params, (process, key))).all()
        return [
            PendingTimeout(r.name, r.job_id, r.due_at, r.attempts, r.status, r.last_error)
            for r in rows
        ]

    async def list(self, work: Work, process: str | None = None) -> builtins.list[Instance]:
        stmt = select(processes).order_by(p.process, p.key)
        if process is not None:
            stmt = stmt.where(p.process == process)
        conn = work._conn or await work.connection()
        return [_instance(r) for r in (await conn.execute(stmt)).all()]


# -- PostgreSQL: the step as one statement --------------------------------------------------------
# Built from the tables' columns, each parameter typed as the column it is written to or compared
# with. The parameters are `_step_params`' names. A statement is built once per shape and kept:
# SQLAlchemy memoises a statement's cache key, so a kept one costs no compile and no cache-key
# walk per step (a fresh `text()` would cost the walk). The outbox rows are INSERT … SELECT …
# UNION ALL, not a multi-row VALUES, whose compiled form SQLAlchemy never caches.
_STATEMENTS: dict[tuple[bool, int, int, bool, bool, int], Any] = {}
_OUTBOX_COLUMNS = tuple(c.name for c in outbox.c)


def _bound(name: str, column: ColumnElement[Any]) -> BindParameter[Any]:
    return bindparam(name, type_=column.type)


_P, _K, _TN, _AT = (
    _bound("p", p.process),
    _bound("k", p.key),
    _bound("tn", t.tenant),
    _bound("at", p.updated_at),
)
_ONE: ColumnElement[Any] = literal_column("1")
_SAVED_VALUES = {
    "version": _bound("nv", p.version),
    "state": _bound("st", p.state),
    "state_version": _bound("sv", p.state_version),
    "ended": _bound("en", p.ended),
    "updated_at": _AT,
}
_INSERT_STEP = insert(processes).values(process=_P, key=_K, **_SAVED_VALUES).returning(_ONE)
_UPDATE_STEP = (
    update(processes)
    .where(p.process == _P, p.key == _K, p.version == _bound("ev", p.version))
    .values(_SAVED_VALUES)
    .returning(_ONE)
)
_STEP_TIMERS = and_(t.process == _P, t.tenant == _TN, t.key == _K)


def _step_statement(
    fresh: bool, drop: int, arm: int, clear: bool, announce: bool, events: int
) -> Any:
    """The statement of one step's writes, built once per shape."""
    shape = (fresh, drop, arm, clear, announce, events)
    found = _STATEMENTS.get(shape)
    if found is not None:
        return found
    saved = (_INSERT_STEP if fresh else _UPDATE_STEP).cte("saved")
    gate = select(_ONE).select_from(saved).exists()  # the timer writes only if the save matched
    ctes: list[Any] = []
    if clear or drop:
        names = [_bound(f"drop_{i}", t.name) for i in range(0 if clear else drop)]
        which = (t.name.in_(names),) if names else ()
        ctes.append(delete(timers).where(_STEP_TIMERS, *which, gate).cte("dropped"))
    ctes += [_armed(i, gate).cte(f"armed_{i}") for i in range(arm)]
    if events:  # a lost race raises ConcurrencyConflict: the transaction rolls these back
        rows = [
            select(*(_bound(f"o{i}_{c}", outbox.c[c]) for c in _OUTBOX_COLUMNS))
            for i in range(events)
        ]
        ctes.append(insert(outbox).from_select(_OUTBOX_COLUMNS, union_all(*rows)).cte("events"))
    answer: list[Any] = [func.count()]
    if announce:
        answer.append(func.pg_notify(TIMERS_CHANNEL, bindparam("wake", type_=String())))
    if events:
        answer.append(func.pg_notify(NOTIFY_CHANNEL, ""))
    stmt = select(*answer).select_from(saved).add_cte(saved, *ctes)
    if len(_STATEMENTS) < 64:
        _STATEMENTS[shape] = stmt
    return stmt


def _armed(i: int, gate: ColumnElement[bool]) -> Any:
    """Arm the step's i-th timeout (as `_timer_row` would), replacing the job of its name."""
    due = _bound(f"due_{i}", t.due_at)
    row: dict[str, Any] = {
        "job_id": _bound(f"job_{i}", t.job_id),
        "process": _P,
        "tenant": _TN,
        "key": _K,
        "name": _bound(f"name_{i}", t.name),
        "due_at": due,
        "available_at": due,
        "attempts": literal(0, t.attempts.type),
        "status": literal(ARMED, t.status.type),
        "last_error": null(),
        "correlation_id": _bound(f"corr_{i}", t.correlation_id),
        "armed_at": _AT,
        "claimed_by": null(),
        "claimed_until": null(),
        "trace_context": _bound(f"trace_{i}", t.trace_context),
    }
    stmt = dialect_insert("postgresql")(timers).from_select(
        list(row), select(*row.values()).where(gate)
    )
    return _rearming(stmt)


def _step_params(
    instance: Instance,
    tenant: str,
    expected: int,
    drop: Sequence[str],
    arm: Sequence[Timeout],
    clear: bool,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "p": instance.process,
        "k": instance.key,
        "tn": tenant,
        "ev": expected,
        "nv": expected + 1,
        "st": encode_state(instance.state),
        "sv": instance.state_version,
        "en": instance.ended,
        "at": instance.updated_at,
    }
    if expected == 0:
        del params["ev"]
    if not (drop or arm or clear):  # no timer statement names the tenant
        del params["tn"]
    for i, name in enumerate(drop):
        params[f"drop_{i}"] = name
    correlation, traced = current_correlation_id(), current_stored()
    for i, timeout in enumerate(arm):
        params[f"job_{i}"] = new_id()
        params[f"name_{i}"] = timeout.name
        params[f"due_{i}"] = timeout.due(instance.updated_at)
        params[f"corr_{i}"] = correlation
        params[f"trace_{i}"] = traced
    return params
