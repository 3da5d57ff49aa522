"""The process runner: a process manager's steps on a process store, with optimistic
concurrency, in the caller's unit of work or one of its own."""

from __future__ import annotations

import builtins
import logging
from typing import Any, TypeVar

from pydantic import TypeAdapter
from sqlalchemy import Table

from loom.runtime.processes.model import (
    DeadTimeout,
    Decision,
    Instance,
    Outcome,
    PendingTimeout,
    ProcessManager,
    ProcessStateRefused,
    Step,
    Tick,
    Timeout,
    TimeoutDue,
)
from loom.runtime.processes.sql import ProcessHost, SqlProcessStore
from loom.runtime.processes.store import InMemoryProcessStore, ProcessStore
from loom.runtime.storage.instances import Instances, instance_version
from loom.runtime.storage.mapping import tenant_column
from loom.runtime.storage.work import Work
from loom.runtime.values import clock
from loom.runtime.values.logs import log_fact

__all__ = [
    "DeadTimeout",
    "Decision",
    "InMemoryProcessStore",
    "Instance",
    "Outcome",
    "PendingTimeout",
    "ProcessHost",
    "ProcessManager",
    "ProcessRunner",
    "ProcessStateRefused",
    "ProcessStore",
    "SqlProcessStore",
    "Step",
    "Tick",
    "Timeout",
    "TimeoutDue",
]

S = TypeVar("S")


def process_name(process: ProcessManager[Any] | str) -> str:
    return process if isinstance(process, str) else process.name


class ProcessRunner:
    """Runs the steps of process managers on `store` (default: `SqlProcessStore`, in the
    service's database). `service.processes` is the service's runner on the SQL store."""

    def __init__(self, service: ProcessHost, store: ProcessStore | None = None) -> None:
        self.service = service
        self.store: ProcessStore = store if store is not None else SqlProcessStore(service)
        # process workflows generated from a model keep their state in their own instance
        # tables; `track` makes `list()` show them too
        self._tracked: dict[str, type[Instances[Any]]] = {}
        # the tracked processes of tenanted contexts: their timers are kept per tenant
        self.tenanted: set[str] = set()

    def track(self, process: str, instances: type[Instances[Any]]) -> None:
        """List the rows of a generated process workflow's instance table under `process`; a
        tenanted instance table makes its timers and episodes per tenant too."""
        self._tracked[process] = instances
        if tenant_column(instances.table) is not None:
            self.tenanted.add(process)

    def tracked(self) -> dict[str, Table]:
        """The generated process workflows' instance tables, by process."""
        return {process: instances.table for process, instances in self._tracked.items()}

    async def run(
        self,
        process: ProcessManager[S],
        key: object,
        step: Step[S],
        *,
        work: Work | None = None,
    ) -> Outcome:
        """Run `step` on the instance of `process` keyed by `key` (any value; stored as its
        `str`), in `work` (a reaction's or a request's unit of work), else in a transaction of
        its own."""
        return await self._in_work(process, str(key), step, None, work)

    async def timeout(
        self,
        process: ProcessManager[S],
        due: TimeoutDue,
        step: Step[S],
        *,
        work: Work | None = None,
    ) -> Outcome:
        """Run `step` for the timeout `due`, only while `due.job_id` is the armed job of that
        name (else `Outcome.STALE`: it was disarmed, or re-armed as another job). The timeout is
        consumed whatever the step decides, unless the decision arms the same name again."""
        if due.process != process.name:
            raise ValueError(f"a timeout of {due.process} given to process {process.name}")
        return await self._in_work(process, due.key, step, due, work)

    async def armed(self, work: Work, due: TimeoutDue) -> bool:
        """Whether `due` is still the armed job of its name (for handlers that keep their state
        elsewhere: lock that state first, then ask)."""
        return await self.store.armed(work, due.process, due.key, due.name) == due.job_id

    async def get(self, process: ProcessManager[Any] | str, key: object) -> Instance | None:
        """The stored instance (ended ones included), or None."""
        async with self.service.autocommit() as work:
            return await self.store.load(work, process_name(process), str(key))

    async def list(
        self, process: ProcessManager[Any] | str | None = None
    ) -> builtins.list[Instance]:
        """Every stored instance (of `process`), by process and key."""
        name = None if process is None else process_name(process)
        async with self.service.autocommit() as work:
            found = await self.store.list(work, name)
            for tracked, instances in self._tracked.items():
                if name is None or name == tracked:
                    found += [
                        _tracked_instance(tracked, instances, s)
                        for s in await instances(work).all()
                    ]
        return sorted(found, key=lambda i: (i.process, i.key))

    async def pending(
        self, process: ProcessManager[Any] | str, key: object, *, work: Work | None = None
    ) -> builtins.list[PendingTimeout]:
        """The timeouts of one instance that have not fired (armed or dead), earliest first."""
        if work is not None:
            return await self.store.pending(work, process_name(process), str(key))
        async with self.service.autocommit() as own:
            return await self.store.pending(own, process_name(process), str(key))

    # -- the step -------------------------------------------------------------------------------
    async def _in_work(
        self,
        process: ProcessManager[S],
        key: str,
        step: Step[S],
        due: TimeoutDue | None,
        work: Work | None,
    ) -> Outcome:
        if work is not None:
            outcome, earliest, _ = await self._step(work, process, key, step, due, owned=False)
            if earliest is not None:
                self.service.scheduler.expect(earliest)
            return outcome
        async with self.service.transaction() as own:
            outcome, earliest, wrote = await self._step(own, process, key, step, due, owned=True)
        if earliest is not None:  # committed: the scheduler may look now
            self.service.scheduler.expect(earliest)
        if wrote:  # outbox rows written by the step's own write, not by the commit
            self.service.outlet.sent()
        return outcome

    async def _step(
        self,
        work: Work,
        process: ProcessManager[S],
        key: str,
        step: Step[S],
        due: TimeoutDue | None,
        *,
        owned: bool,
    ) -> tuple[Outcome, Any, bool]:
        """(outcome, earliest timeout armed, whether outbox rows were written). `owned`: `work`
        is the step's own transaction."""
        store, name = self.store, process.name
        fields: dict[str, Any] = {"process": name, "key": key}
        if due is not None:
            fields.update(timeout=due.name, job_id=str(due.job_id))
        instance = await store.load(work, name, key)
        if instance is not None and instance.ended:
            log_fact("process_ignored_ended", logging.INFO, fields)
            return Outcome.ENDED_IGNORED, None, False
        if due is not None and await store.armed(work, name, key, due.name) != due.job_id:
            log_fact("timeout_stale", logging.INFO, fields)
            return Outcome.STALE, None, False
        decision = step(_current(process, instance))
        if decision is None:
            if due is not None:  # consumed, though nothing was decided
                await store.disarm(work, name, key, due.name)
            return Outcome.IGNORED, None, False
        if not process.is_state(decision.state):
            raise ProcessStateRefused(
                name, key, f"the step decided a state that {name}.is_state does not recognise"
            )
        now = clock.now()
        fresh = Instance(name, key, decision.state, process.version, 0, decision.ended, now)
        cancel = decision.cancel if due is None else (*decision.cancel, due.name)
        expected = 0 if instance is None else instance.version
        routes = self.service.outlet.routes
        durable = [(routes[c.event_type], c) for c in decision.commands if c.event_type in routes]
        if owned and durable and isinstance(store, SqlProcessStore):
            # the step's own transaction carries no other event, so its durable commands can be
            # written by the step's write itself (on PostgreSQL: the same statement) instead of
            # by the commit, one round trip later; in the same order, with the same envelopes
            saved = await store.apply(
                work,
                fresh,
                expected,
                cancel=cancel,
                arm=decision.timeouts,
                clear=decision.ended,
                events=durable,
            )
            local = [c for c in decision.commands if c.event_type not in routes]
        else:
            saved = await store.apply(
                work, fresh, expected, cancel=cancel, arm=decision.timeouts, clear=decision.ended
            )
            local, durable = list(decision.commands), []
        earliest = min((x.due(now) for x in decision.timeouts), default=None)
        for command in local:
            work.emit(command)
        log_fact(
            "process_decided",
            logging.INFO,
            {
                **fields,
                "version": saved.version,
                "armed": [t.name for t in decision.timeouts],
                "cancelled": list(decision.cancel),
                "commands": [type(c).__name__ for c in decision.commands],
                "ended": decision.ended,
            },
        )
        return Outcome.DECIDED, earliest, bool(durable)


def _current(process: ProcessManager[S], instance: Instance | None) -> S | None:
    """The stored state, if this version of the process wrote it and recognises it."""
    if instance is None:
        return None
    if instance.state_version != process.version:
        raise ProcessStateRefused(
            process.name,
            instance.key,
            f"the state was saved by version {instance.state_version}, this is version "
            f"{process.version}: migrate the stored states, or keep the version",
        )
    state = instance.state
    if not process.is_state(state):
        raise ProcessStateRefused(
            process.name, instance.key, f"the stored state is not one {process.name} recognises"
        )
    return state


_ = (Decision, Timeout, DeadTimeout, Tick, InMemoryProcessStore)


def _tracked_instance(process: str, instances: type[Instances[Any]], state: Any) -> Instance:
    """A generated workflow's instance row seen as an `Instance` (its state as plain JSON)."""
    data = TypeAdapter(type(state)).dump_python(state, mode="json")
    return Instance(
        process=process,
        key=str(getattr(state, instances.key)),
        state=data,
        state_version=0,
        version=instance_version(state),
        ended=bool(getattr(state, "ended", False)),
        updated_at=clock.now(),
    )
