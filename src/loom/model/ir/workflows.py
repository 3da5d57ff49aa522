"""Workflows, and the other bodies in the workflow vocabulary: command and query handlers,
projections (folded from events by reactions, like a workflow's), timers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loom.model.ir.expressions import Expr
from loom.model.ir.members import Field, Function, Parameter
from loom.model.ir.origin import Origin
from loom.model.ir.statements import Stmt
from loom.model.ir.types import EventType, Type
from loom.model.isolation import Isolation


@dataclass(frozen=True, slots=True)
class WorkflowCreate:
    params: tuple[Parameter, ...]
    result: Type | None
    body: tuple[Stmt, ...]
    origin: Origin
    # `create(…) requires gate`: over the principal and the parameters, checked first (403)
    requires: Expr | None = None


@dataclass(frozen=True, slots=True)
class Apply:
    """`apply(e: Event) { field := … }` of an event-sourced workflow: folds each event the workflow
    emits into its state (AssignState statements over `param`, an event-typed Param). The back end
    runs the matching apply right after each workflow-level Emit of that event."""

    event: str
    param: str
    body: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Reaction:
    """A reaction to an event, run after the commit that raised it, in a unit of work of its own
    (one transaction, whatever the workflow's `transactional` says; a failure leaves no effect).

    - `kind="create"`: an event-triggered `create(e: E) by e.key` of a correlated workflow. Its
      body starts with BindInstance(by): the instance keyed by `by` is loaded or allocated.
    - `kind="on"`: `on(e: E) [by e.key]`. With `by` (a correlated workflow, or a projection), the
      body starts with RouteInstance(by) (a workflow: no instance drops the event) or BindInstance
      (a projection: its row is loaded or allocated). Without `by`, a stateless reaction (an
      uncorrelated workflow) or, in a projection, one whose body binds the row by assigning the key.

    `event` is the event (of this context or another); `param` the name its body reads it by;
    `by` the correlation value over Param(param), None without `by`. Correlated bodies end with
    SaveInstance, like the workflow's other bodies."""

    kind: Literal["create", "on"]
    event: EventType
    param: str
    by: Expr | None
    body: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class OnTimeout:
    """`on timeout NAME { … }` of a process workflow: run by the scheduler when the timeout armed
    under NAME is due (and still the armed one), as the system principal, in one unit of work, on
    the instance that armed it. Its body acts on that instance (no BindInstance / RouteInstance:
    the instance is the one the timer row names) and ends with SaveInstance."""

    name: str
    body: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Timer:
    """`timer NAME every 1h { … }`: a context's recurring sweep, a body in the commandHandler
    vocabulary run once per tick (across replicas) in a transaction, as the system principal."""

    name: str
    context: str
    every_ms: int
    body: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Workflow:
    """A workflow. `state` are its declared state fields; `correlation` names the id-shaped one that
    keys its instance rows (None: no instance is kept). A command `create` binds the instance by the
    parameter named like the correlation field, or by the value its body assigns to that field."""

    name: str
    context: str
    transactional: bool
    isolation: Isolation | None
    creates: tuple[WorkflowCreate, ...]
    origin: Origin
    state: tuple[Field, ...] = ()
    correlation: str | None = None
    functions: tuple[Function, ...] = ()
    event_sourced: bool = False
    applies: tuple[Apply, ...] = ()
    # event-triggered creates and `on` reactions, in source order; `creates` are the command ones
    reactions: tuple[Reaction, ...] = ()
    # a process manager: `on timeout` handlers, and whether any body schedules, cancels or
    # completes (its instance rows then also keep `ended`, and its instance answers its timeouts)
    timeouts: tuple[OnTimeout, ...] = ()
    process: bool = False
    # `workflow X once`: an ended instance ignores later starters; otherwise a starter after
    # `complete` begins the instance's next episode
    once: bool = False
    # `workflow X autocommit`: not transactional by choice (the default, said out loud), so a
    # body that commits several saves on their own is not warned of (`loom.body-not-atomic`)
    autocommit: bool = False


@dataclass(frozen=True, slots=True)
class Handler:
    """A context-level `commandHandler` (POST) or `queryHandler` (GET, read-only) with a body in the
    workflow vocabulary. A query handler may return aggregates (`Agg`, `Agg?`, `Agg[]`)."""

    kind: Literal["command", "query"]
    name: str
    context: str
    params: tuple[Parameter, ...]
    result: Type | None
    body: tuple[Stmt, ...]
    origin: Origin
    transactional: bool = False
    isolation: Isolation | None = None
    autocommit: bool = False  # as a workflow's
    requires: Expr | None = None  # `requires gate`: checked before the body reads anything (403)


@dataclass(frozen=True, slots=True)
class Projection:
    """`projection Name { fields  on(e: E) [by e.x] { … } }`: a read model with one row per value of
    its key field `key` (the first id-shaped field, else the first field), folded from events by
    its reactions (kind "on"; their bodies: BindInstance, Let, Precondition, AssignState, If, and a
    final SaveInstance). Served over HTTP only, never read by a workflow. `filter`: its read rule,
    a condition over the row's fields (SelfField) and CurrentUser that its GET routes apply."""

    name: str
    context: str
    fields: tuple[Field, ...]
    key: str
    reactions: tuple[Reaction, ...]
    origin: Origin
    filter: Expr | None = None
