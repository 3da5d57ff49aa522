"""Process stores: the protocol, and `InMemoryProcessStore`, which keeps instances and timeouts in
dictionaries (tests of one process, no database). `SqlProcessStore` (`processes.sql`) writes on the
unit of work's connection, so a step's state, its timers and its outbox rows commit (or roll
back) together.

Both pass the conformance suite in tests/runtime/storage/test_process_store.py.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol
from uuid import UUID

from loom.runtime.processes.model import Instance, JsonValue, PendingTimeout, Timeout
from loom.runtime.processes.tables import ARMED
from loom.runtime.values import clock
from loom.runtime.values.errors import ConcurrencyConflict
from loom.runtime.values.ids import new_id

if TYPE_CHECKING:
    from loom.runtime.storage.work import Work


def encode_state(state: JsonValue) -> str:
    """Plain JSON only (a datetime, a Decimal or NaN raise here, before anything is written)."""
    return json.dumps(state, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class ProcessStore(Protocol):
    """Where a runner keeps instances and timeouts; every call runs in the step's unit of work.

    apply: save `instance` with a version check (INSERT when `expected_version` is 0, else UPDATE
    … WHERE version = expected; a lost race raises `ConcurrencyConflict` and writes nothing), then
    disarm every timeout of the instance (`clear`) or the `cancel` names, and arm `arm` (arming a
    name replaces its job); answers the saved instance. The building blocks, for state kept
    elsewhere (a generated workflow's own instance table): arm (replaces the job armed under that
    name; answers the new job id), disarm / disarm_all (answer how many were removed). armed: the
    job id armed under a name, else None.
    """

    async def load(self, work: Work, process: str, key: str) -> Instance | None: ...

    async def apply(
        self,
        work: Work,
        instance: Instance,
        expected_version: int,
        *,
        cancel: Sequence[str] = (),
        arm: Sequence[Timeout] = (),
        clear: bool = False,
    ) -> Instance: ...

    async def arm(
        self, work: Work, process: str, key: str, timeout: Timeout, now: datetime
    ) -> UUID: ...

    async def disarm(self, work: Work, process: str, key: str, name: str) -> int: ...

    async def disarm_all(self, work: Work, process: str, key: str) -> int: ...

    async def armed(self, work: Work, process: str, key: str, name: str) -> UUID | None: ...

    async def pending(
        self, work: Work, process: str, key: str
    ) -> builtins.list[PendingTimeout]: ...

    async def list(self, work: Work, process: str | None = None) -> builtins.list[Instance]: ...


# -- in memory ------------------------------------------------------------------------------------
class InMemoryProcessStore:
    """Instances and timeouts in dictionaries, for tests and a single process. States are kept
    as JSON text, so what a step decided is checked and copied exactly as the SQL store would.
    Writes apply at once: a caller's unit of work that rolls back after `runner.run` returned
    does not undo them (the runner itself writes nothing before the version check passes)."""

    def __init__(self) -> None:
        self._instances: dict[tuple[str, str], tuple[Instance, str]] = {}
        self._timers: dict[tuple[str, str, str], PendingTimeout] = {}

    async def load(self, work: Work, process: str, key: str) -> Instance | None:
        found = self._instances.get((process, key))
        if found is None:
            return None
        instance, text = found
        return replace(instance, state=json.loads(text))

    async def save(self, work: Work, instance: Instance, expected_version: int) -> Instance:
        text = encode_state(instance.state)
        found = self._instances.get((instance.process, instance.key))
        current = 0 if found is None else found[0].version
        if current != expected_version:
            raise ConcurrencyConflict(f"process {instance.process}", instance.key)
        saved = replace(instance, state=json.loads(text), version=expected_version + 1)
        self._instances[(instance.process, instance.key)] = (saved, text)
        return saved

    async def apply(
        self,
        work: Work,
        instance: Instance,
        expected_version: int,
        *,
        cancel: Sequence[str] = (),
        arm: Sequence[Timeout] = (),
        clear: bool = False,
    ) -> Instance:
        saved = await self.save(work, instance, expected_version)
        process, key = instance.process, instance.key
        if clear:
            await self.disarm_all(work, process, key)
        for name in cancel:
            await self.disarm(work, process, key, name)
        for timeout in arm:
            await self.arm(work, process, key, timeout, instance.updated_at)
        return saved

    async def arm(
        self, work: Work, process: str, key: str, timeout: Timeout, now: datetime
    ) -> UUID:
        job_id = new_id()
        self._timers[(process, key, timeout.name)] = PendingTimeout(
            timeout.name, job_id, timeout.due(now), 0, ARMED
        )
        return job_id

    async def disarm(self, work: Work, process: str, key: str, name: str) -> int:
        return 0 if self._timers.pop((process, key, name), None) is None else 1

    async def disarm_all(self, work: Work, process: str, key: str) -> int:
        mine = [k for k in self._timers if k[:2] == (process, key)]
        for k in mine:
            del self._timers[k]
        return len(mine)

    async def armed(self, work: Work, process: str, key: str, name: str) -> UUID | None:
        found = self._timers.get((process, key, name))
        return None if found is None or found.status != ARMED else found.job_id

    async def pending(self, work: Work, process: str, key: str) -> builtins.list[PendingTimeout]:
        mine = [v for k, v in self._timers.items() if k[:2] == (process, key)]
        return sorted(mine, key=lambda x: (x.due_at, x.name))

    async def list(self, work: Work, process: str | None = None) -> builtins.list[Instance]:
        found = [
            replace(instance, state=json.loads(text))
            for (name, _), (instance, text) in self._instances.items()
            if process is None or name == process
        ]
        return sorted(found, key=lambda i: (i.process, i.key))

    def due(self, now: datetime | None = None) -> builtins.list[tuple[str, str, PendingTimeout]]:
        """(process, key, timeout) of every armed timeout due at `now` (default: the clock),
        earliest first: what a test delivers with `runner.timeout`."""
        at = now or clock.now()
        found = [
            (k[0], k[1], v) for k, v in self._timers.items() if v.status == ARMED and v.due_at <= at
        ]
        return sorted(found, key=lambda x: (x[2].due_at, x[2].job_id))
