"""Workflow instances: the persisted state of a correlated workflow, one row per correlation key.

Generated:

    @dataclass(kw_only=True)
    class FollowUpState:            # in domain.py: the correlation field first, then the state
        ticket: TicketId
        attempts: int = 0

    class FollowUpInstances(Instances[FollowUpState]):
        state = FollowUpState
        table = tables.follow_up_instances
        key = "ticket"
        workflow = "FollowUp"

A body binds its instance with `await store.bind(key)` (load it, or allocate a fresh one with the
declared defaults: nothing is written yet) and saves it last with `await store.save(instance)`:
INSERT at version 1, else UPDATE … WHERE version = v (a lost race is a `ConcurrencyConflict`).

In a tenanted context (docs/language.md#tenants) the table has a `tenant` column and is keyed by
(tenant, key): every statement here is scoped to `current_tenant()` (a request's tenant, or the
tenant a reaction or timeout runs in), so two tenants may use one correlation key, each with an
instance of its own, and another tenant's instance is not found: a 404 like an unknown key.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.exc import StatementError

from loom.runtime.storage.journal import LINE_PARAM, Step, appended, line, step_of
from loom.runtime.storage.mapping import (
    VERSION_ATTR,
    Mapper,
    steps_column,
    tenant_column,
    trace_column,
)
from loom.runtime.storage.work import Work
from loom.runtime.values import clock
from loom.runtime.values.errors import ConcurrencyConflict, NotFound
from loom.runtime.values.logs import current_correlation_id
from loom.runtime.values.principal import current_principal, current_tenant
from loom.runtime.values.tracing import current_stored

S = TypeVar("S")


class _Statements:
    __slots__ = (
        "all",
        "by_key",
        "by_key_locked",
        "insert",
        "mapper",
        "steps",
        "tenant",
        "trace",
        "update",
    )

    def __init__(self, state: type, table: Table, key: str) -> None:
        self.mapper = Mapper(state, table, key)
        c = table.c
        self.tenant = tenant_column(table)
        trace = trace_column(table)
        self.trace = None if trace is None else trace.key
        steps = steps_column(table)
        self.steps = None if steps is None else steps.key
        one = [c[key] == bindparam("_loom_key")]
        if self.tenant is not None:
            one.append(self.tenant == bindparam("_loom_tenant"))
        self.by_key = select(*self.mapper.columns).where(*one)
        self.by_key_locked = self.by_key.with_for_update()
        self.all = select(*self.mapper.columns).order_by(c[key])
        self.insert = insert(table)
        changed: dict[str, Any] = {"version": c.version + 1}
        if steps is not None:  # the journal appended in SQL: the save never reads it
            changed[steps.key] = appended(steps)
        self.update = update(table).where(*one, c.version == bindparam("_loom_v")).values(changed)

    def params(self, key: Any) -> dict[str, Any]:
        """The parameters naming one row: its key, and in a tenanted context the tenant."""
        if self.tenant is None:
            return {"_loom_key": key}
        return {"_loom_key": key, "_loom_tenant": current_tenant()}


class Instances(Generic[S]):
    """The instance rows of one workflow (subclassed by generated code)."""

    state: ClassVar[type]
    table: ClassVar[Table]
    key: ClassVar[str]
    workflow: ClassVar[str]
    _loom_statements: ClassVar[_Statements | None] = None

    __slots__ = ("work",)

    def __init__(self, work: Work) -> None:
        self.work = work

    @classmethod
    def _statements(cls) -> _Statements:
        found = cls.__dict__.get("_loom_statements")
        if found is None:
            found = _Statements(cls.state, cls.table, cls.key)
            cls._loom_statements = found
        return found

    async def find(self, key: Any) -> S | None:
        """The instance keyed by `key`, or None."""
        st = self._statements()
        work = self.work
        stmt = st.by_key_locked if work.lock_reads else st.by_key
        conn = work._conn or await work.connection()
        try:
            row = (await conn.execute(stmt, st.params(key))).first()
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow, key)
        return None if row is None else st.mapper.load(row)

    async def all(self) -> list[S]:
        """Every instance, ordered by key (for listings such as `service.processes.list()`): in
        a tenanted context the principal's tenant's, or every tenant's for a principal without
        one (an operator's or a test's listing; no route lists instances)."""
        st = self._statements()
        work = self.work
        conn = work._conn or await work.connection()
        stmt = st.all
        tenant = current_principal().tenant
        if st.tenant is not None and tenant:
            stmt = stmt.where(st.tenant == tenant)
        try:
            rows = (await conn.execute(stmt)).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow)
        return [st.mapper.load(r) for r in rows]

    async def get(self, key: Any) -> S:
        """The instance keyed by `key`; `NotFound` (named by the workflow) when none."""
        found = await self.find(key)
        if found is None:
            raise NotFound(self.workflow, key, f"{self.workflow} instance {key} does not exist")
        return found

    async def bind(self, key: Any) -> S:
        """Load-or-allocate: the stored instance, else a fresh one (declared defaults, version 0,
        not written until `save`)."""
        found = await self.find(key)
        if found is not None:
            return found
        fresh: S = self.state(**{self.key: key})
        fresh.__dict__[VERSION_ATTR] = 0
        return fresh

    async def save(self, instance: S, *, carry_emits: bool = False) -> None:
        """INSERT (version 1) or UPDATE … WHERE version = v; `ConcurrencyConflict` on a lost race.
        `carry_emits` as for an aggregate's save (`Repository.save`)."""
        st = self._statements()
        work = self.work
        d = instance.__dict__
        key = d[self.key]
        version = d.get(VERSION_ATTR, 0)
        params = st.mapper.dump(instance)
        if st.trace is not None:  # the step's span, where to find what moved it last
            params[st.trace] = current_stored()
        if st.steps is not None:
            raised = [*work._pending, *work._emitted]
            journaled = line(step_of(work.step) or self._command(), clock.now(), raised)
            params[st.steps if version == 0 else LINE_PARAM] = journaled
        conn = await work._write_connection(None, carry_emits)
        try:
            if version == 0:
                params["version"] = 1
                if st.tenant is not None:
                    params[st.tenant.key] = current_tenant()
                await conn.execute(st.insert, params)
            else:
                params.update(st.params(key))
                params["_loom_v"] = version
                del params[self.key]
                result = await conn.execute(st.update, params)
                if result.rowcount != 1:
                    raise ConcurrencyConflict(self.workflow, key)
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow, key)
        work._wrote = True
        d[VERSION_ATTR] = version + 1
        await work._after_save([], (self.workflow, key))

    def _command(self) -> Step:
        """The step of a save no delivery or timeout runs: the workflow's own entry, called by a
        request or by code."""
        name = getattr(self, "process", None) or self.workflow
        return Step("command", name, correlation_id=current_correlation_id())


def instance_version(instance: Any) -> int:
    """The stored version of an instance (0 = never saved)."""
    return int(instance.__dict__.get(VERSION_ATTR, 0))
