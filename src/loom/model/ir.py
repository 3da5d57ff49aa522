"""The resolved, lowered model that back ends consume.

The front end (`loom.lang`) produces it only for a model without errors, so a back end may assume that
every name is resolved, every expression is typed and every rule of the language holds. Names keep the
spelling of the model (`creditLimit`); each back end applies its own casing.

Everything here is immutable and ordered as in the source, so that generation is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

# the API-call nodes live in api.py (this module is long enough): back ends name them `api.X`
from loom.model.api import ApiCall, CallApi, Resource
from loom.model.isolation import Isolation

# the time functions live in time.py: back ends name them `time.TimeCall`
from loom.model.time import TimeCall
from loom.model.topology import ChannelSource, Deployable

# --------------------------------------------------------------------------------------------------
# Provenance


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a declaration came from: the file as given on the command line (relative when possible)."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


# --------------------------------------------------------------------------------------------------
# Types

Primitive: TypeAlias = Literal["string", "int", "decimal", "bool", "datetime", "date", "duration"]


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """`max_length` is N of a `string(N)`: a bound on the values a field or parameter takes, checked
    where they enter (the wire, a save, an aggregate's or value object's invariants). It is not part
    of the type's identity (`string(10) == string`), so any string may be assigned to it and type
    rules stay those of `string`."""

    name: Primitive
    max_length: int | None = field(default=None, compare=False)
    # `decimal(P, S)`: like `max_length`, a bound checked where values enter, not part of the type
    # (see docs/language.md "Decimals"; `loom.lang.check.scales` tracks the scale of expressions)
    precision: int | None = field(default=None, compare=False)
    scale: int | None = field(default=None, compare=False)


MAX_STRING_LENGTH = 10_485_760
"""The largest N of `string(N)`: PostgreSQL's VARCHAR limit."""
MAX_DECIMAL_PRECISION = 100
"""The largest P of `decimal(P, S)`: 50 digits before the point and 50 after it, the bounds of
every `decimal` (`loom.runtime.decimals`, which the model does not import)."""
MAX_DECIMAL_SCALE = 50
ROUNDING_MODES = ("halfEven", "halfUp", "down", "up")
"""The modes of `round(x, S, mode)`, the default first; `loom.runtime.decimals.ROUNDING_MODES` maps
each to its rounding (tests/runtime/test_rounding.py checks the two agree)."""


@dataclass(frozen=True, slots=True)
class IdType:
    """`Customer id`: the identity of an aggregate (a UUID on every back end)."""

    aggregate: str
    context: str


@dataclass(frozen=True, slots=True)
class EnumType:
    name: str
    context: str


@dataclass(frozen=True, slots=True)
class ListType:
    element: Type


@dataclass(frozen=True, slots=True)
class OptionalType:
    inner: Type


@dataclass(frozen=True, slots=True)
class AggregateType:
    """The type of a local bound to a loaded or created aggregate (never a field type)."""

    name: str
    context: str


@dataclass(frozen=True, slots=True)
class EventType:
    """The type of an event value (a create parameter typed by an event, in later issues)."""

    name: str
    context: str


@dataclass(frozen=True, slots=True)
class VoidType:
    """The type of a call statement with no value (an operation call)."""


@dataclass(frozen=True, slots=True)
class ValueType:
    """A value object (`value Money { … }`): an immutable record compared by its fields, usable
    wherever a field or parameter type goes."""

    name: str
    context: str


@dataclass(frozen=True, slots=True)
class PayloadType:
    """A payload (`command` / `query` / `response` / `error`): a transport record, only a workflow
    `create` parameter or part of a command / query handler contract."""

    name: str
    context: str
    kind: Literal["command", "query", "response", "error"]


Type: TypeAlias = (
    PrimitiveType
    | IdType
    | EnumType
    | ListType
    | OptionalType
    | AggregateType
    | EventType
    | VoidType
    | ValueType
    | PayloadType
)

STRING = PrimitiveType("string")
INT = PrimitiveType("int")
DECIMAL = PrimitiveType("decimal")
BOOL = PrimitiveType("bool")
DATETIME = PrimitiveType("datetime")
DATE = PrimitiveType("date")
DURATION = PrimitiveType("duration")
VOID = VoidType()


# --------------------------------------------------------------------------------------------------
# Expressions. Every expression carries its type and the exact source text it was written as (for
# error messages such as "precondition `creditLimit >= amount` failed").


@dataclass(frozen=True, slots=True)
class Literal_:
    """A literal. `value` is the Python value: str, int, decimal.Decimal (as text, see below), bool.

    Decimal literals keep their source text in `value` (e.g. "12.50") so that no float ever appears.
    """

    value: str | int | bool | None
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class SelfField:
    """A field, derived value or `id` of the aggregate whose member is being evaluated."""

    name: str
    type: Type
    text: str
    kind: Literal["field", "derived", "id"] = "field"


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of the enclosing operation, function or workflow `create`."""

    name: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Local:
    """A `let` binding of the enclosing body."""

    name: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Member:
    """`obj.name`: a field, derived value or `id` of an aggregate-typed (or event-typed) value."""

    obj: Expr
    name: str
    type: Type
    text: str
    kind: Literal["field", "derived", "id"] = "field"


@dataclass(frozen=True, slots=True)
class EnumMember:
    enum: str
    member: str
    type: EnumType
    text: str


@dataclass(frozen=True, slots=True)
class Unary:
    op: Literal["-", "!"]
    operand: Expr
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic (+ - * / %), comparison (== != < <= > >=) and boolean (&& ||) operators.

    Typing rules (enforced by the checker): int op int -> int, except `/` which is decimal;
    any arithmetic with a decimal operand -> decimal; `+` on strings concatenates.
    """

    op: Literal["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||"]
    left: Expr
    right: Expr
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Conditional:
    condition: Expr
    then: Expr
    otherwise: Expr
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Now:
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Round:
    """`round(x, 2)`, `round(x, 2, halfUp)`: `value` with exactly `scale` digits after the point,
    rounded by `mode` (a name of `loom.runtime.decimals.ROUNDING_MODES`: `halfEven` when none)."""

    value: Expr
    scale: int
    mode: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A call of a pure `function`.

    - `owner="aggregate"`, `receiver=None`: a function of the enclosing aggregate (`fee(x)`).
    - `owner="aggregate"`, `receiver=e`: a function of the aggregate `e` evaluates to, called from a
      workflow or handler body (`source.fee(x)`); `aggregate` names it.
    - `owner="workflow"`: a function of the enclosing workflow `workflow` (emitted at module scope,
      namespaced by the workflow).
    """

    function: str
    args: tuple[Expr, ...]
    type: Type
    text: str
    owner: Literal["aggregate", "workflow"] = "aggregate"
    receiver: Expr | None = None
    aggregate: str | None = None
    workflow: str | None = None


@dataclass(frozen=True, slots=True)
class StateField:
    """A state field of the enclosing (correlated) workflow, read in one of its bodies."""

    name: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class ServiceCall:
    """A call of a non-mutating domain-service method used as a value: `Pricing.quote(a, 3)`."""

    service: str
    method: str
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class ListLiteral:
    items: tuple[Expr, ...]
    type: Type
    text: str


PrincipalMember: TypeAlias = Literal[
    "id", "isSystem", "isAuthenticated", "roles", "hasRole", "claim", "tenant"
]


@dataclass(frozen=True, slots=True)
class CurrentUser:
    """A read of the principal the code runs as (`currentUser`): the request's user, anonymous,
    or the system (a reaction). `member` is what is read: `id` (string; none for anonymous
    callers, the system and a token without `sub`, when `==` / `!=` with it are false and reading
    it as a value is a 401), `isSystem`, `isAuthenticated` (bool), `roles` (string[]), `tenant`
    (string: the caller's tenant, in a tenanted context only, where a request has one), or the
    calls `hasRole(name)` (bool) and `claim(name)` (string, "" when absent), whose one argument is
    `args[0]`. Only in an operation's `requires` gate and in command-side workflow / handler bodies."""

    member: PrincipalMember
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class RecordArg:
    """One field of a record expression: its declared type and its value (None: an optional field
    left out that declares no default)."""

    name: str
    type: Type
    value: Expr | None


@dataclass(frozen=True, slots=True)
class Construct:
    """`Money { amount: 1, currency: "EUR" }`: a value object or payload. `args` lists every field in
    declaration order; a field the expression left out carries its declared default."""

    type: ValueType | PayloadType
    args: tuple[RecordArg, ...]
    text: str


Expr: TypeAlias = (
    Literal_
    | SelfField
    | Param
    | Local
    | Member
    | EnumMember
    | Unary
    | Binary
    | Conditional
    | Now
    | FunctionCall
    | ListLiteral
    | StateField
    | ServiceCall
    | Construct
    | CurrentUser
    | ApiCall
    | Round
    | TimeCall
)


# --------------------------------------------------------------------------------------------------
# Statements


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


Stmt: TypeAlias = (
    Precondition
    | Assign
    | Let
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


# --------------------------------------------------------------------------------------------------
# Declarations


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    type: Type


@dataclass(frozen=True, slots=True)
class Enum:
    name: str
    members: tuple[str, ...]
    origin: Origin
    # `Closed renamed from Shut`: (member, the name it had in the previous model), in member order
    renamed_from: tuple[tuple[str, str], ...] = ()

    def old_name(self, member: str) -> str | None:
        """The name `member` had in the previous model, None when it was not renamed."""
        return next((old for m, old in self.renamed_from if m == member), None)


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Type
    default: Expr | None
    immutable: bool
    origin: Origin
    # `renamed from OLD`: the field's name in the previous model (its stored value keeps its place)
    renamed_from: str | None = None


@dataclass(frozen=True, slots=True)
class Derived:
    name: str
    type: Type
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class Invariant:
    condition: Expr
    message: str | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class Function:
    """A pure function: the expression form (`value`) or the block form (`body`: Let, Precondition,
    and a final Return), exactly one of the two. `value` is None for the block form."""

    name: str
    params: tuple[Parameter, ...]
    result: Type
    value: Expr | None
    origin: Origin
    body: tuple[Stmt, ...] = ()


@dataclass(frozen=True, slots=True)
class Operation:
    """An operation. `private`: no route, callable only from the aggregate's other members.
    `extern`: no body in the model; the user's Python implements it (`result` may then be set).
    `requires`: the gate over the principal (CurrentUser), the parameters and the fields, checked
    first, before `when`, wherever the operation runs; refused, it is a 403 `forbidden`.
    `internal`: no route; the context's workflows, handlers, reactions, timeouts and timers call it."""

    name: str
    params: tuple[Parameter, ...]
    when: Expr | None
    body: tuple[Stmt, ...]
    origin: Origin
    emits: tuple[str, ...] = ()
    private: bool = False
    extern: bool = False
    result: Type | None = None
    requires: Expr | None = None
    internal: bool = False

    @property
    def routed(self) -> bool:
        """Whether the operation has an HTTP route (and an OpenAPI entry)."""
        return not (self.private or self.internal)


@dataclass(frozen=True, slots=True)
class Factory:
    """A declared `create(params) { … }` of an aggregate. Its body (Precondition, Let, Assign with
    `:=`, Emit) initialises the fields; fields it does not assign take their defaults."""

    params: tuple[Parameter, ...]
    body: tuple[Stmt, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Criterion:
    """`criterion Name(params) of Agg = condition`; the condition reads SelfField and Param only and
    is translatable to SQL (comparisons, boolean operators, arithmetic, literals, enum members,
    now())."""

    name: str
    aggregate: str
    params: tuple[Parameter, ...]
    condition: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class Retrieval:
    """`retrieval Name(params) of Agg { where: Criterion(args) }`; `args` are over its params."""

    name: str
    aggregate: str
    params: tuple[Parameter, ...]
    criterion: str
    args: tuple[Expr, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class RepositoryFind:
    """A declared `find byCode(c: string): Agg?` (or `: Agg`, `: Agg[]`) of a repository: equality on
    the fields named by the find (`byCode` -> `code`, `byOwnerAndNumber` -> `owner`, `number`), in
    parameter order."""

    name: str
    params: tuple[Parameter, ...]
    fields: tuple[str, ...]
    cardinality: Literal["one", "optional", "many"]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Aggregate:
    name: str
    context: str
    fields: tuple[Field, ...]
    derived: tuple[Derived, ...]
    invariants: tuple[Invariant, ...]
    functions: tuple[Function, ...]
    operations: tuple[Operation, ...]
    origin: Origin
    crudish: bool = False
    factory: Factory | None = None
    unique: tuple[tuple[str, ...], ...] = ()
    renamed_from: str | None = None  # the aggregate's name in the previous model

    @property
    def create_inputs(self) -> tuple[Field, ...] | tuple[Parameter, ...]:
        """The inputs `Agg.create(...)` binds to, in order: the declared factory's parameters, else
        the stored fields."""
        return self.factory.params if self.factory else self.fields

    @property
    def updatable_fields(self) -> tuple[Field, ...]:
        """The fields a crudish update may change: every field that is not immutable."""
        return tuple(f for f in self.fields if not f.immutable)


@dataclass(frozen=True, slots=True)
class Repository:
    name: str
    aggregate: str
    origin: Origin
    finds: tuple[RepositoryFind, ...] = ()
    # `filter C`: parameterless criteria of the aggregate that every read through it applies
    filters: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Event:
    """An event. Its fields are never immutable; a field's default is a constant (a Literal,
    EnumMember, ListLiteral or Construct of constants), which an emit that omits the field gives
    and an event stored without the field decodes to."""

    name: str
    context: str
    fields: tuple[Field, ...]
    origin: Origin
    renamed_from: str | None = None  # the event's name in the previous model


@dataclass(frozen=True, slots=True)
class WorkflowCreate:
    params: tuple[Parameter, ...]
    result: Type | None
    body: tuple[Stmt, ...]
    origin: Origin


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


@dataclass(frozen=True, slots=True)
class ServiceMethod:
    """A method of a domain service: aggregate-typed and value parameters, a body in the operation
    vocabulary over them (operation calls on aggregate parameters, precondition, let, emit, return).
    `mutates` lists the aggregate parameters it calls operations on."""

    name: str
    params: tuple[Parameter, ...]
    result: Type | None
    body: tuple[Stmt, ...]
    mutates: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class DomainService:
    name: str
    context: str
    methods: tuple[ServiceMethod, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class ValueObject:
    """`value Money { amount: decimal, currency: string  invariant amount >= 0 }`: an immutable
    record compared by its fields. Its invariants (over its own fields, read as SelfField) hold for
    every constructed value; a stored one is not checked again when it is read back."""

    name: str
    context: str
    fields: tuple[Field, ...]
    invariants: tuple[Invariant, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Payload:
    """`command` / `query` / `response` / `error` `Name { fields }`: a transport record of a workflow
    `create` or a handler contract."""

    kind: Literal["command", "query", "response", "error"]
    name: str
    context: str
    fields: tuple[Field, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Projection:
    """`projection Name { fields  on(e: E) [by e.x] { … } }`: a read model with one row per value of
    its key field `key` (the first id-shaped field, else the first field), folded from events by
    its reactions (kind "on"; their bodies: BindInstance, Let, Precondition, AssignState, If, and a
    final SaveInstance). Served over HTTP only, never read by a workflow."""

    name: str
    context: str
    fields: tuple[Field, ...]
    key: str
    reactions: tuple[Reaction, ...]
    origin: Origin


Retention: TypeAlias = Literal["work", "log"]


@dataclass(frozen=True, slots=True)
class Channel:
    """`channel Name { carries: …  retention: …  maxAttempts: n  backoff: first .. cap }`: the events
    it carries (of any context) are durable: written to the outbox in the transaction of the write
    that raised them and delivered by the relay at least once, retried with a backoff doubling from
    `backoff_ms[0]` to `backoff_ms[1]`, dead-lettered after `max_attempts` deliveries."""

    name: str
    context: str
    events: tuple[EventType, ...]
    origin: Origin
    retention: Retention = "work"
    max_attempts: int = 5
    backoff_ms: tuple[int, int] = (1_000, 300_000)
    # the `channelSource` it is placed on (`source: Bus`); None when the model names none
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Context:
    name: str
    enums: tuple[Enum, ...]
    aggregates: tuple[Aggregate, ...]
    repositories: tuple[Repository, ...]
    events: tuple[Event, ...]
    workflows: tuple[Workflow, ...]
    origin: Origin
    criteria: tuple[Criterion, ...] = ()
    retrievals: tuple[Retrieval, ...] = ()
    handlers: tuple[Handler, ...] = ()
    services: tuple[DomainService, ...] = ()
    values: tuple[ValueObject, ...] = ()
    payloads: tuple[Payload, ...] = ()
    projections: tuple[Projection, ...] = ()
    channels: tuple[Channel, ...] = ()
    timers: tuple[Timer, ...] = ()
    # `resource NAME { kind: api … }`: the bindings its bodies call other contexts' handlers through
    resources: tuple[Resource, ...] = ()
    # `context Billing tenanted { … }`: every aggregate row carries the tenant of the principal
    # that created it, and every read, write and route is scoped to the caller's tenant
    tenanted: bool = False

    def aggregate(self, name: str) -> Aggregate:
        return next(a for a in self.aggregates if a.name == name)

    @property
    def records(self) -> tuple[ValueObject | Payload, ...]:
        """The value objects, then the payloads."""
        out: tuple[ValueObject | Payload, ...] = (*self.values, *self.payloads)
        return out

    def record(self, name: str) -> ValueObject | Payload:
        """The value object or payload of that name."""
        return next(r for r in self.records if r.name == name)

    def repository_for(self, aggregate: str) -> Repository | None:
        return next((r for r in self.repositories if r.aggregate == aggregate), None)


@dataclass(frozen=True, slots=True)
class Model:
    """A whole model: every context of every file given, in first-appearance order."""

    contexts: tuple[Context, ...]
    sources: tuple[str, ...] = field(default=())
    # a digest of the model's source text (loom.lang.lower.revision), stamped on every event a
    # service of this model writes; "" for a model built by hand
    revision: str = ""
    # the declared deployables and channel sources (topology.py); `deployables.deployables_of`
    # answers the implicit deployable when none is declared
    deployables: tuple[Deployable, ...] = ()
    channel_sources: tuple[ChannelSource, ...] = ()
