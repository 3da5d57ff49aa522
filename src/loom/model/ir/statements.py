"""The statements of bodies, those written and those lowering inserts (the saves, the binding
and routing of a workflow's instance). The API call statement is `CallApi`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from loom.model.ir.expressions import ApiCall, Expr
from loom.model.ir.origin import Origin
from loom.model.ir.types import Type


@dataclass(frozen=True, slots=True)
class Precondition:
    condition: Expr
    message: str | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class Assign:
    """`field := e`, `field += e`, `field -= e` on the aggregate's own field (operation bodies)."""

    field: str
    op: Literal[":=", "+=", "-="]
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class Let:
    """`let x = e` for a plain value."""

    name: str
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class Var:
    """`var x = e` in a workflow or handler body: a local of type `type` (the declared one, else
    the value's) that later `SetLocal`s reassign, in the body or in a loop or branch of it."""

    name: str
    type: Type
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class SetLocal:
    """`x := e` on a `var` of the enclosing body; `type` is the var's (the value fits it)."""

    name: str
    type: Type
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class Emit:
    """`emit Event { f: e, ... }`; `args` lists every field of the event, in the event's order."""

    event: str
    context: str
    args: tuple[tuple[str, Expr], ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Return:
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class LoadById:
    """`let x = Repo.getById(e)`: a must-exist read; a miss is the standard 404."""

    name: str
    repository: str
    aggregate: str
    id: Expr
    origin: Origin
    ignoring: tuple[str, ...] = ()  # repository filters switched off for this read


@dataclass(frozen=True, slots=True)
class CreateAggregate:
    """`let x = Agg.create(...)` in any of its three spellings, normalised to one named binding.

    `args` lists every create input of the aggregate in declaration order; an input the call left out
    carries the field's declared default (or None for an optional field without one).
    """

    name: str
    aggregate: str
    args: tuple[tuple[str, Expr | None], ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class CallOperation:
    """`x.op(args)` as a statement, on a local bound to a loaded or created aggregate."""

    target: str
    aggregate: str
    operation: str
    args: tuple[Expr, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Save:
    """Inserted by lowering at the exit of a body: persist the aggregate bound to `name`.

    Lowering places one Save per aggregate the body must persist, in the order the body bound them
    (fresh aggregates always; loaded ones only when an operation was invoked on them).
    """

    name: str
    repository: str
    aggregate: str
    fresh: bool


@dataclass(frozen=True, slots=True)
class Read:
    """A repository read. Which one is given by `kind`:

    - `"by_id"`: `Repo.getById(id)` / `Repo.findById(id)`; `args` is `(("id", e),)`.
    - `"by_key"`: `Repo.getBy(code: x)` / `Repo.findBy(code: x)` over a `unique (…)` key; `args` names
      the key fields in the key's declared order; `key` is the key's fields.
    - `"criterion"`: `Repo.findAll(C(args))` / `Repo.find(C(args))`; `target` names the criterion;
      `args` are the criterion's parameters by name.
    - `"retrieval"`: `Repo.run(R(args))`; `target` names the retrieval.
    - `"find"`: a declared `find byCode(c: string): Agg?` of the repository; `target` names it.

    `cardinality` says what the read answers: `"one"` (must exist; a miss is the standard 404),
    `"optional"` (None on a miss) or `"many"` (a list, possibly empty).
    """

    repository: str
    aggregate: str
    kind: Literal["by_id", "by_key", "criterion", "retrieval", "find"]
    cardinality: Literal["one", "optional", "many"]
    args: tuple[tuple[str, Expr], ...]
    target: str | None = None
    key: tuple[str, ...] = ()
    ignoring: tuple[str, ...] = ()  # repository filters switched off (`ignoring …`)


@dataclass(frozen=True, slots=True)
class Load:
    """`let x = <read>` for a read of cardinality "one" (other than by id) or "many"."""

    name: str
    read: Read
    origin: Origin


@dataclass(frozen=True, slots=True)
class IfLet:
    """`if let x = <optional read> { then } else { otherwise }`.

    Each branch ends with its own Save statements (branch-local creations and mutations, including
    of `x`), placed by lowering. `otherwise` is empty when there is no else branch.
    """

    name: str
    read: Read | None
    then: tuple[Stmt, ...]
    otherwise: tuple[Stmt, ...]
    origin: Origin
    value: Expr | None = None  # the source when it is an optional value rather than a read


@dataclass(frozen=True, slots=True)
class ForEach:
    """`for x in <list> { body }`; the body ends with a Save of `x` when an operation (or a mutating
    service call) was invoked on it, and Saves of what the body created."""

    name: str
    items: Expr
    body: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class NotFoundStmt:
    """`notFound` / `notFound "detail"`: end the body with the standard 404 problem.

    `aggregate` is set for a bare `notFound` in an `if let` else (the detail then names it, exactly as
    a by-id miss of that aggregate would); `detail` is the given text, if any.
    """

    detail: str | None
    aggregate: str | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class Delete:
    """`Repo.delete(x)` / `Repo.remove(x)`: delete the aggregate bound to `name` (version-checked).
    Lowering never adds a Save for it afterwards."""

    name: str
    repository: str
    aggregate: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class AssignState:
    """`field := value` on the enclosing workflow's own state (create / on / apply bodies)."""

    field: str
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class BindInstance:
    """Load-or-allocate the instance row of the enclosing correlated workflow, keyed by `key`.

    Lowering puts it first in a create body whose parameters include the correlation field, or in
    place of the body's assignment to the correlation field otherwise. Afterwards StateField reads
    and AssignState writes act on that instance."""

    key: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class RouteInstance:
    """First statement of an `on(e: E) by e.key` reaction of a correlated workflow: load the instance
    keyed by `key`. When there is none the reaction ends there: the event is dropped and logged
    (`event_unrouted`), and nothing is written. StateField reads and AssignState writes then act on
    that instance."""

    key: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class If:
    """`if condition { then } else { otherwise }`. Like IfLet, each branch ends with the saves of what
    it created or mutated (placed by lowering); `otherwise` is empty without an else branch."""

    condition: Expr
    then: tuple[Stmt, ...]
    otherwise: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class SaveInstance:
    """Inserted by lowering among the exit saves (after the aggregate saves) of every body of a
    correlated workflow: persist its instance row, version-checked."""


@dataclass(frozen=True, slots=True)
class CallService:
    """`Svc.method(args)` as a statement. `mutates` names the locals (bound aggregates) the call
    mutates; lowering saves them at exit like operation targets."""

    service: str
    method: str
    args: tuple[Expr, ...]
    mutates: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class CallOwnOperation:
    """Inside an aggregate operation: `other(args)` runs another operation of the same aggregate
    (private or not) whole — its `when` gate, preconditions, assignments, emits and invariant
    check — on `self`."""

    operation: str
    args: tuple[Expr, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class ScheduleTimeout:
    """`schedule NAME at EXPR` / `schedule NAME after 15m` in a body of a process workflow: arm
    the named timeout of the bound instance (re-arming replaces the armed one), in the body's unit
    of work. Exactly one of `at` (a datetime), `after_ms` (a duration literal) and `after` (a
    duration expression, `after minutes(holdMinutes)`) is set."""

    name: str
    at: Expr | None
    after_ms: int | None
    origin: Origin
    after: Expr | None = None


@dataclass(frozen=True, slots=True)
class CancelTimeout:
    """`cancel NAME`: disarm the named timeout of the bound instance (none armed: no effect)."""

    name: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class CompleteInstance:
    """`complete`: end the bound instance (its `ended` flag, saved with it) and disarm all its
    timeouts; later events and timeouts for it are ignored (and logged)."""

    origin: Origin


@dataclass(frozen=True, slots=True)
class CallApi:
    """A command call as a statement of its own (its answer, if any, is not used)."""

    call: ApiCall
    origin: Origin


Stmt: TypeAlias = (
    Precondition
    | Assign
    | Let
    | Var
    | SetLocal
    | Emit
    | Return
    | LoadById
    | CreateAggregate
    | CallOperation
    | Save
    | Load
    | IfLet
    | ForEach
    | NotFoundStmt
    | Delete
    | AssignState
    | CallService
    | BindInstance
    | SaveInstance
    | CallOwnOperation
    | RouteInstance
    | If
    | ScheduleTimeout
    | CancelTimeout
    | CompleteInstance
    | CallApi
)
