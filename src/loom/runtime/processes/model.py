"""The data of process managers: decisions, timeouts, instances, what a timeout delivers.

Public through `loom.runtime.processes` (see its docstring and docs/processes.md).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeGuard, TypeVar
from uuid import UUID

from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.errors import LoomError
from loom.runtime.values.problem_types import problem_type

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)

JsonValue = Any
"""Plain JSON: dict (str keys), list, str, int, float, bool, None, nested."""


@dataclass(frozen=True, slots=True)
class Timeout:
    """Arm the timeout `name` of the instance, due `at` an instant or `after` a delay counted
    from the step's `now()`: exactly one of the two. Arming a name that is armed replaces it (the
    earlier job never fires)."""

    name: str
    at: datetime | None = None
    after: timedelta | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a timeout needs a name")
        if (self.at is None) == (self.after is None):
            raise ValueError(f"timeout {self.name}: give exactly one of `at` and `after`")
        if self.at is not None and self.at.tzinfo is None:
            raise ValueError(f"timeout {self.name}: `at` must be timezone-aware")
        if self.after is not None and self.after < timedelta(0):
            raise ValueError(f"timeout {self.name}: `after` cannot be negative")

    def due(self, now: datetime) -> datetime:
        """The instant this timeout is due, for a step deciding at `now`."""
        return self.at if self.at is not None else now + (self.after or timedelta(0))


@dataclass(frozen=True, slots=True)
class Decision(Generic[S]):
    """What a step decided: the next `state` (plain JSON), the `commands` to send after the
    commit (domain events, emitted on the unit of work: they ride the outbox when a channel
    carries them, else they are dispatched in-process after the commit), the `timeouts` to arm,
    the timeout names to `cancel`, and whether the instance `ended` (it then keeps no timeout and
    ignores every later step)."""

    state: S
    commands: Sequence[DomainEvent] = ()
    timeouts: Sequence[Timeout] = ()
    cancel: Sequence[str] = ()
    ended: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "commands", tuple(self.commands))
        object.__setattr__(self, "timeouts", tuple(self.timeouts))
        object.__setattr__(self, "cancel", tuple(self.cancel))
        if self.ended and self.timeouts:
            raise ValueError("an ended process cannot arm a timeout")
        names = [t.name for t in self.timeouts]
        if len(set(names)) != len(names):
            raise ValueError(f"a decision arms one timeout per name, not {names}")


Step = Callable[[S | None], Decision[S] | None]
"""A step: from the current state (None: no instance yet) to a decision, or None to ignore."""


class ProcessManager(Protocol[S_co]):
    """A process manager class: its `name` (stable, e.g. "Scheduling.ConfirmationDeadline"), the
    `version` of its state shape (stored with every state), and `is_state`, which recognises a
    state this version saved. A state saved by another version, or one `is_state` rejects, is
    refused (`ProcessStateRefused`), never misread. Steps are plain functions (see `Step`)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> int: ...

    def is_state(self, value: object, /) -> TypeGuard[S_co]: ...


class Outcome(enum.StrEnum):
    """What `ProcessRunner.run` / `.timeout` did."""

    DECIDED = "decided"  # the step decided; state saved, timers and commands applied
    IGNORED = "ignored"  # the step answered None: nothing written
    ENDED_IGNORED = "ended_ignored"  # the instance had ended: the step never ran
    STALE = "stale"  # a timeout that is no longer the armed job: the step never ran


@dataclass(frozen=True, slots=True)
class Instance:
    """One stored process instance. `version` counts saves (optimistic concurrency; 0: never
    saved); `state_version` is the process version that wrote `state`."""

    process: str
    key: str
    state: JsonValue
    state_version: int
    version: int
    ended: bool
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class PendingTimeout:
    """A timeout of an instance that has not fired: `status` "armed", or "dead" once every
    attempt to deliver it failed (a dead letter, until redriven)."""

    name: str
    job_id: UUID
    due_at: datetime
    attempts: int
    status: str
    last_error: str | None = None


@dataclass(frozen=True, slots=True)
class TimeoutDue:
    """What the scheduler hands a timeout handler: which timeout of which instance, the job
    that armed it (a step runs only while that very job is still the armed one), when it was
    due, and the delivery attempt (1 first). `tenant`: the tenant of a tenanted context's
    instance, which the handler runs in (as its system principal); None for any other."""

    process: str
    key: str
    name: str
    job_id: UUID
    due_at: datetime
    attempt: int = 1
    correlation_id: str | None = None
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class DeadTimeout:
    """A timeout whose handler failed `max_attempts` times; kept until redriven."""

    job_id: UUID
    process: str
    key: str
    name: str
    due_at: datetime
    attempts: int
    last_error: str | None
    correlation_id: str | None
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class Tick:
    """What a context timer's handler receives: its name, the instant the tick was scheduled
    for, and how many scheduled ticks this one run stands for (more than 1 after downtime)."""

    name: str
    scheduled_at: datetime
    coalesced: int = 1


class ProcessStateRefused(LoomError):
    """A stored state another version of the process saved, or one its `is_state` does not
    recognise: refused rather than misread (a 500 for a request; a retried, then dead, delivery)."""

    status, type, title = problem_type("internal").parts()

    def __init__(self, process: str, key: str, detail: str) -> None:
        super().__init__(f"process {process} {key}: {detail}")
        self.process = process
        self.key = key
