"""Episodes: a process workflow's instance runs again after `complete`.

A generated process workflow (timeouts or `complete`) keeps its instances in a `ProcessInstances`
store. Its instance row holds the current (or last) episode: `episode` (1, 2, …), `started_at`,
`ended_at` beside `ended`. When a starter meets an ended instance, `next_episode` archives the
ended episode in `__loom_episodes` and answers a fresh instance (the declared defaults) numbered one
more, at the stored version: the body's final `save` is then the version-checked UPDATE that
starts it, so of two concurrent starters one wins and the other is a `ConcurrencyConflict` (its
archive row, a duplicate of the winner's, is refused alike). Two starters never make two episodes.

    class DunningInstances(ProcessInstances[DunningState]):
        state = DunningState
        table = tables.dunning_instances
        key = "subscription"
        workflow = "Dunning"
        process = "Billing.Dunning"

The final state is archived as the instance route answers it: the service's
`instance_answers[process]` (`DunningInstanceOut`, which the generated `main.py` hands to
`create_app`), so the repository depends on the domain and the runtime only.

A `once` workflow never calls `next_episode`: its ended instance ignores later starters.

A tenanted context's episodes are kept under their instance's tenant (the `tenant` of
`__loom_episodes`, part of its key), and read back under the caller's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar, Final, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import StatementError

from loom.runtime.processes.tables import NO_TENANT, episodes
from loom.runtime.storage.instances import Instances
from loom.runtime.storage.mapping import VERSION_ATTR
from loom.runtime.values.clock import now
from loom.runtime.values.principal import current_tenant

S = TypeVar("S")

# The instance attributes of a process workflow's state (the model reserves their names:
# `ended`, `episode`, `startedAt`, `endedAt`), read and written here by name.
ENDED, EPISODE, STARTED_AT, ENDED_AT = "ended", "episode", "started_at", "ended_at"
RUNNING: Final = "running"
COMPLETED: Final = "completed"

_e = episodes.c
_ARCHIVE = insert(episodes)
_ARCHIVED = (
    select(_e.episode, _e.started_at, _e.ended_at, _e.status, _e.state)
    .where(
        _e.process == bindparam("process"),
        _e.tenant == bindparam("tenant"),
        _e.key == bindparam("key"),
    )
    .order_by(_e.episode)
)


class _Answer(Protocol):
    """The generated `<Workflow>InstanceOut`: the wire form of an instance."""

    @classmethod
    def from_state(cls, state: Any) -> BaseModel: ...


class Episode(BaseModel):
    """One episode of an instance, as `GET …/instances/{key}/episodes` answers it."""

    episode: int
    startedAt: datetime | None
    endedAt: datetime | None
    status: Literal["running", "completed"]
    state: dict[str, Any]


class InstanceTimeoutOut(BaseModel):
    """A timeout of a process instance that has not fired, as its instance route answers it:
    "armed", or "dead" (dead-lettered, until redriven), read off a runtime `PendingTimeout`. One
    definition for every context (a per-context copy would give the OpenAPI document two schemas
    of one name, which FastAPI then names after the generated package)."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    due_at: datetime = Field(serialization_alias="dueAt")
    # the runtime's timer statuses (loom.runtime.processes.tables: ARMED, DEAD)
    status: Literal["armed", "dead"]
    attempts: int


class ProcessInstances(Instances[S]):
    """The instance rows of a process workflow, with their episodes."""

    process: ClassVar[str]  # `<Context>.<Workflow>`: what keys its timers and its episodes

    __slots__ = ()

    async def bind(self, key: Any) -> S:
        """Load-or-allocate; a fresh instance is episode 1, started now."""
        instance = await super().bind(key)
        d = instance.__dict__
        if d.get(VERSION_ATTR, 0) == 0:
            d[STARTED_AT] = now()
        return instance

    async def save(self, instance: S, *, carry_emits: bool = False) -> None:
        """Save; an instance `complete` ended is stamped with when its episode ended."""
        d = instance.__dict__
        if d[ENDED] and d[ENDED_AT] is None:
            d[ENDED_AT] = now()
        await super().save(instance, carry_emits=carry_emits)

    async def next_episode(self, ended: S) -> S:
        """Archive the ended episode and answer the next one: declared defaults, numbered one
        more, started now, at the stored version (written by the body's final `save`)."""
        d = ended.__dict__
        key = d[self.key]
        row = {
            "process": self.process,
            "tenant": self._tenant(),
            "key": str(key),
            "episode": d[EPISODE],
            "started_at": d[STARTED_AT],
            "ended_at": d[ENDED_AT],
            "status": COMPLETED,
            "state": json.dumps(self._wire(ended), sort_keys=True),
        }
        work = self.work
        conn = work._conn or await work.connection()
        try:
            await conn.execute(_ARCHIVE, row)
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow, key)  # a duplicate: a concurrent starter won
        fresh: S = self.state(**{self.key: key})
        f = fresh.__dict__
        f[EPISODE] = d[EPISODE] + 1
        f[STARTED_AT] = now()
        f[VERSION_ATTR] = d[VERSION_ATTR]
        return fresh

    async def episodes(self, key: Any) -> list[Episode]:
        """Every episode of the instance keyed by `key`, oldest first, the current one last;
        `NotFound` when there is no instance."""
        current = await self.get(key)
        d = current.__dict__
        work = self.work
        conn = work._conn or await work.connection()
        params = {"process": self.process, "tenant": self._tenant(), "key": str(key)}
        try:
            rows = (await conn.execute(_ARCHIVED, params)).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow, key)
        out = [
            Episode(
                episode=r.episode,
                startedAt=r.started_at,
                endedAt=r.ended_at,
                status=r.status,
                state=json.loads(r.state),
            )
            for r in rows
            if r.episode < d[EPISODE]
        ]
        status: Literal["running", "completed"] = COMPLETED if d[ENDED] else RUNNING
        out.append(
            Episode(
                episode=d[EPISODE],
                startedAt=d[STARTED_AT],
                endedAt=d[ENDED_AT],
                status=status,
                state=self._wire(current),
            )
        )
        return out

    def _tenant(self) -> str:
        """The tenant this store's episodes are kept under (`NO_TENANT` when untenanted)."""
        return NO_TENANT if self._statements().tenant is None else current_tenant()

    def _wire(self, instance: S) -> dict[str, Any]:
        """The instance as the instance route answers it, without its timeouts (an ended
        instance has none)."""
        answers: Mapping[str, type[_Answer]] = self.work.host.instance_answers
        if self.process not in answers:
            raise RuntimeError(
                f"no instance answer for process {self.process}: pass the generated "
                "`INSTANCE_ANSWERS` of main.py to create_app(instance_answers=...)"
            )
        answer = answers[self.process].from_state(instance)
        return answer.model_dump(mode="json", by_alias=True, exclude={"timeouts"})
