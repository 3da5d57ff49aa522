"""The syntax tree: what the file says, before any name is resolved.

Nodes compare by identity (`eq=False`) so the checker can key side tables on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from loom.lang.diagnostics import Span

# --------------------------------------------------------------------------------------------------
# Types


@dataclass(eq=False)
class TypeArg:
    """One argument of a type, `100` in `string(100)`, as written (the checker judges it)."""

    text: str
    span: Span


@dataclass(eq=False)
class TypeRef:
    name: str
    name_span: Span
    is_id: bool
    is_list: bool
    is_optional: bool
    span: Span
    # `Orders.OrderPlaced` / `Orders.Order id`: the context a qualified name names
    qualifier: str | None = None
    qualifier_span: Span | None = None
    # `string(100)`: the arguments in parentheses (None without parentheses), and their span
    args: list[TypeArg] | None = None
    args_span: Span | None = None


# --------------------------------------------------------------------------------------------------
# Expressions


@dataclass(eq=False)
class Name:
    name: str
    span: Span


@dataclass(eq=False)
class Literal:
    kind: str  # "string" | "int" | "decimal" | "bool" | "duration" (in microseconds)
    value: str | int | bool
    span: Span


@dataclass(eq=False)
class ListLit:
    items: list[Expr]
    span: Span


@dataclass(eq=False)
class Unary:
    op: str
    operand: Expr
    span: Span


@dataclass(eq=False)
class Binary:
    op: str
    left: Expr
    right: Expr
    span: Span
    op_span: Span


@dataclass(eq=False)
class Ternary:
    condition: Expr
    then: Expr
    otherwise: Expr
    span: Span


@dataclass(eq=False)
class MemberAccess:
    obj: Expr
    name: str
    name_span: Span
    span: Span


@dataclass(eq=False)
class Arg:
    """A call argument: positional (`name is None`), named (`x: e`) or one record entry."""

    name: str | None
    name_span: Span | None
    value: Expr
    span: Span


@dataclass(eq=False)
class Record:
    """`{ x: a, y: b }` — only as the single argument of `Agg.create`."""

    entries: list[Arg]
    span: Span


@dataclass(eq=False)
class Call:
    callee: Expr
    args: list[Arg | Record]
    span: Span


@dataclass(eq=False)
class RecordExpr:
    """`Money { amount: 1, currency: "EUR" }`: a value object or payload built from its fields. Only a
    whole value (a `let` / `return` / `:=` right-hand side, an entry, an argument, a list item, a
    default), never an operand."""

    type_name: str
    type_span: Span
    entries: list[Arg]
    span: Span


Expr = Name | Literal | ListLit | Unary | Binary | Ternary | MemberAccess | Call | RecordExpr


# --------------------------------------------------------------------------------------------------
# Statements


@dataclass(eq=False)
class Precondition:
    condition: Expr
    message: str | None
    span: Span


@dataclass(eq=False)
class Assign:
    target: Expr
    op: str
    value: Expr
    span: Span


@dataclass(eq=False)
class Let:
    name: str
    name_span: Span
    value: Expr
    span: Span
    # `let x = Repo.read(…) ignoring F, G`: the repository filters this read switches off
    ignoring: list[tuple[str, Span]] = field(default_factory=list)


@dataclass(eq=False)
class Emit:
    event: str
    event_span: Span
    fields: list[Arg]
    span: Span


@dataclass(eq=False)
class Return:
    value: Expr
    span: Span


@dataclass(eq=False)
class ExprStmt:
    expr: Expr
    span: Span


@dataclass(eq=False)
class IfLet:
    name: str
    name_span: Span
    source: Expr
    then: list[Stmt]
    otherwise: list[Stmt] | None
    span: Span
    ignoring: list[tuple[str, Span]] = field(default_factory=list)


@dataclass(eq=False)
class ForEach:
    name: str
    name_span: Span
    items: Expr
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class NotFound:
    detail: str | None
    span: Span


@dataclass(eq=False)
class If:
    """`if cond { … } [else { … }]`; an `else if …` is an else block holding that one statement."""

    condition: Expr
    then: list[Stmt]
    otherwise: list[Stmt] | None
    span: Span


@dataclass(eq=False)
class Schedule:
    """`schedule NAME at EXPR` / `schedule NAME after 15m`: arm (or re-arm) a named timeout of the
    enclosing correlated workflow's instance. Exactly one of `at` / `after_ms` (a duration literal) /
    `after` (a duration expression: `after minutes(n)`) is set."""

    name: str
    name_span: Span
    at: Expr | None
    after_ms: int | None
    span: Span
    after: Expr | None = None


@dataclass(eq=False)
class Cancel:
    """`cancel NAME`: disarm a named timeout of the instance (nothing armed: nothing happens)."""

    name: str
    name_span: Span
    span: Span


@dataclass(eq=False)
class Complete:
    """`complete`: end the instance; later events and timeouts for it are ignored."""

    span: Span


Stmt = (
    Precondition
    | Assign
    | Let
    | Emit
    | Return
    | ExprStmt
    | IfLet
    | ForEach
    | NotFound
    | If
    | Schedule
    | Cancel
    | Complete
)


def nested_blocks(stmt: Stmt) -> list[list[Stmt]]:
    """The statement lists nested directly in `stmt`: the branches of an `if` / `if let`, the
    body of a `for`; none for any other statement."""
    if isinstance(stmt, (IfLet, If)):
        return [stmt.then, stmt.otherwise or []]
    if isinstance(stmt, ForEach):
        return [stmt.body]
    return []


def walk_stmts(stmts: list[Stmt]) -> Iterator[Stmt]:
    """Every statement of a body, nested ones included, in source order."""
    for s in stmts:
        yield s
        for block in nested_blocks(s):
            yield from walk_stmts(block)


# --------------------------------------------------------------------------------------------------
# Declarations


@dataclass(eq=False)
class Param:
    name: str
    name_span: Span
    type: TypeRef
    span: Span


@dataclass(eq=False)
class Renamed:
    """`renamed from OLD`: the name the declaration had in the previous model (its data keeps its
    place under the new name)."""

    name: str
    span: Span  # of OLD


@dataclass(eq=False)
class Field:
    name: str
    name_span: Span
    type: TypeRef
    immutable: bool
    default: Expr | None
    span: Span
    renamed_from: Renamed | None = None


@dataclass(eq=False)
class Derived:
    name: str
    name_span: Span
    type: TypeRef
    value: Expr
    span: Span


@dataclass(eq=False)
class Invariant:
    condition: Expr
    message: str | None
    span: Span


@dataclass(eq=False)
class Function:
    name: str
    name_span: Span
    params: list[Param]
    result: TypeRef
    value: Expr | None  # None for the block form
    span: Span
    body: list[Stmt] | None = None  # the block form


@dataclass(eq=False)
class Operation:
    name: str
    name_span: Span
    params: list[Param]
    when: Expr | None
    body: list[Stmt]
    span: Span
    private: bool = False
    extern: bool = False
    result: TypeRef | None = None
    has_body: bool = True  # False for an extern operation written without a block
    # `requires gate`: who may run it (over `currentUser`, the parameters and the fields)
    requires: Expr | None = None
    internal: bool = False  # no route: only the context's workflows, handlers and reactions call it
    # `public operation`: the route is meant to be there beside the workflows that call it
    public: bool = False


@dataclass(eq=False)
class Unique:
    fields: list[tuple[str, Span]]
    span: Span
    name: str = "unique"


@dataclass(eq=False)
class Factory:
    params: list[Param]
    body: list[Stmt]
    span: Span
    name: str = "create"


Member = Field | Derived | Invariant | Function | Operation | Unique | Factory


@dataclass(eq=False)
class Enum:
    name: str
    name_span: Span
    members: list[tuple[str, Span]]
    span: Span
    # `Closed renamed from Shut`: the members renamed, by their index in `members`
    renamed_from: dict[int, Renamed] = field(default_factory=dict)


@dataclass(eq=False)
class Aggregate:
    name: str
    name_span: Span
    traits: list[tuple[str, Span]]
    members: list[Member]
    span: Span
    renamed_from: Renamed | None = None

    @property
    def fields(self) -> list[Field]:
        return [m for m in self.members if isinstance(m, Field)]

    @property
    def derived(self) -> list[Derived]:
        return [m for m in self.members if isinstance(m, Derived)]

    @property
    def invariants(self) -> list[Invariant]:
        return [m for m in self.members if isinstance(m, Invariant)]

    @property
    def functions(self) -> list[Function]:
        return [m for m in self.members if isinstance(m, Function)]

    @property
    def operations(self) -> list[Operation]:
        return [m for m in self.members if isinstance(m, Operation)]

    @property
    def uniques(self) -> list[Unique]:
        return [m for m in self.members if isinstance(m, Unique)]

    @property
    def factory(self) -> Factory | None:
        return next((m for m in self.members if isinstance(m, Factory)), None)

    @property
    def crudish(self) -> bool:
        return any(t == "crudish" for t, _ in self.traits)


@dataclass(eq=False)
class RepoFind:
    name: str
    name_span: Span
    params: list[Param]
    result: TypeRef
    span: Span


@dataclass(eq=False)
class Repository:
    name: str
    name_span: Span
    aggregate: str
    aggregate_span: Span
    span: Span
    finds: list[RepoFind] = field(default_factory=list)
    filters: list[tuple[str, Span]] = field(default_factory=list)  # `filter Criterion`


@dataclass(eq=False)
class Criterion:
    name: str
    name_span: Span
    params: list[Param]
    aggregate: str
    aggregate_span: Span
    condition: Expr
    span: Span


@dataclass(eq=False)
class Retrieval:
    name: str
    name_span: Span
    params: list[Param]
    aggregate: str
    aggregate_span: Span
    where: Expr
    span: Span


@dataclass(eq=False)
class Handler:
    kind: str  # "command" | "query"
    name: str
    name_span: Span
    params: list[Param]
    result: TypeRef | None
    transactional: bool
    isolation: str | None
    isolation_span: Span | None
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class ServiceMethod:
    name: str
    name_span: Span
    params: list[Param]
    result: TypeRef | None
    body: list[Stmt] | None
    value: Expr | None
    span: Span


@dataclass(eq=False)
class DomainService:
    name: str
    name_span: Span
    methods: list[ServiceMethod]
    span: Span


@dataclass(eq=False)
class Apply:
    params: list[Param]
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class Event:
    name: str
    name_span: Span
    fields: list[Field]  # never immutable; a default is what an emit that omits the field gives
    span: Span
    renamed_from: Renamed | None = None


@dataclass(eq=False)
class ValueObject:
    """`value Money { amount: decimal, currency: string  invariant amount >= 0 }`."""

    name: str
    name_span: Span
    fields: list[Field]
    invariants: list[Invariant]
    span: Span


@dataclass(eq=False)
class Payload:
    """`command Name { … }` (or `query`, `response`, `error`): a transport record, in scope only as a
    workflow `create` parameter and in a commandHandler / queryHandler contract."""

    kind: str  # "command" | "query" | "response" | "error"
    name: str
    name_span: Span
    fields: list[Field]
    span: Span


@dataclass(eq=False)
class Create:
    params: list[Param]
    result: TypeRef | None
    body: list[Stmt]
    span: Span
    # `create(e: Event) by e.field { … }`: the correlation value of an event-triggered starter
    by: Expr | None = None


@dataclass(eq=False)
class On:
    """`on(e: Event) [by e.field] { … }`: a reaction of a workflow or a projection."""

    params: list[Param]
    by: Expr | None
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class OnTimeout:
    """`on timeout NAME { … }`: the handler of a timeout of a correlated workflow."""

    name: str
    name_span: Span
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class Timer:
    """`timer NAME every 1h { … }`: a context's recurring sweep, a body like a commandHandler's."""

    name: str
    name_span: Span
    every_ms: int
    every_span: Span
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class Handle:
    """A leftover `handle` member: parsed only so that it can be refused with a precise message."""

    name: str
    name_span: Span
    span: Span


@dataclass(eq=False)
class Workflow:
    name: str
    name_span: Span
    transactional: bool
    isolation: str | None
    isolation_span: Span | None
    creates: list[Create]
    handles: list[Handle]
    span: Span
    event_sourced: bool = False
    state: list[Field] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    applies: list[Apply] = field(default_factory=list)
    ons: list[On] = field(default_factory=list)
    timeouts: list[OnTimeout] = field(default_factory=list)
    once: Span | None = None  # `workflow X once`: the modifier, where written


@dataclass(eq=False)
class Projection:
    """`projection Name { key: X id  n: int = 0  on(e: Event) by e.x { n := n + 1 } }`: a read
    model folded from events, one row per key, served over HTTP only."""

    name: str
    name_span: Span
    fields: list[Field]
    ons: list[On]
    span: Span


@dataclass(frozen=True, slots=True)
class Duration:
    """A single duration setting (`timeout: 2s`), in milliseconds."""

    ms: int


@dataclass(eq=False)
class ChannelSetting:
    """One `key: value` of a channel, a resource, a deployable or a channel source. `value` is a
    list of (possibly qualified) names with their spans, an int, a (min, max) pair of durations in
    milliseconds, or one `Duration`."""

    key: str
    key_span: Span
    value: list[tuple[str | None, str, Span]] | int | tuple[int, int] | Duration
    value_span: Span
    span: Span


@dataclass(eq=False)
class Channel:
    """`channel Name { carries: A, Ctx.B  retention: work  maxAttempts: 5  backoff: 1s .. 5m }`."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


@dataclass(eq=False)
class Resource:
    """`resource directory { kind: api  context: Directory  timeout: 2s  retries: 2 }`: a binding
    through which bodies call another context's command and query handlers."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


Decl = (
    Enum
    | Aggregate
    | Repository
    | Event
    | Workflow
    | Criterion
    | Retrieval
    | Handler
    | DomainService
    | ValueObject
    | Payload
    | Projection
    | Channel
    | Resource
    | Timer
)


@dataclass(eq=False)
class Context:
    name: str
    name_span: Span
    decls: list[Decl]
    span: Span
    tenanted: Span | None = None  # `context Billing tenanted { … }`: the word's span


@dataclass(eq=False)
class Deployable:
    """`deployable Name { contexts: A, B }`: contexts that run together, in one service."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


@dataclass(eq=False)
class ChannelSource:
    """`channelSource Name { kind: nats }`: a broker that channels name with `source: Name`."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


@dataclass(eq=False)
class File:
    name: str
    contexts: list[Context] = field(default_factory=list)
    deployables: list[Deployable] = field(default_factory=list)
    channel_sources: list[ChannelSource] = field(default_factory=list)


def is_process(wf: Workflow) -> bool:
    """A process manager: a workflow with `on timeout` handlers, or whose bodies schedule,
    cancel or complete (its instance then also answers `ended` and `timeouts`)."""
    bodies = [c.body for c in wf.creates] + [o.body for o in wf.ons]
    return bool(wf.timeouts) or any(
        isinstance(s, (Schedule, Cancel, Complete)) for b in bodies for s in walk_stmts(b)
    )
