"""What the checker learns about the program, for lowering: the typed result of pass 3.

Every table is keyed by the AST node itself (nodes hash by identity, `eq=False`), and lowering
reads only these tables and the syntax tree: it never calls back into a rule. A model that reaches
lowering has no error, so every table holds an entry for every node lowering asks about.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lang.types import AnyType
from loom.model import ir


@dataclass
class Load:
    """`let x = Repo.getById(id)`."""

    name: str
    repository: str
    aggregate: str
    id: ir.Expr
    ignoring: tuple[str, ...] = ()


@dataclass
class Create:
    """`let x = Agg.create(…)`; `given` maps the inputs the call gave to their values."""

    name: str
    aggregate: str
    given: dict[str, ir.Expr]


@dataclass
class CallOp:
    """`x.op(args)` on a local bound to an aggregate (a workflow, handler or service body)."""

    target: str
    aggregate: str
    operation: str
    args: tuple[ir.Expr, ...]


@dataclass
class OwnCall:
    """`other(args)` in an operation: another operation of the same aggregate."""

    operation: str
    args: tuple[ir.Expr, ...]


@dataclass
class ReadLoad:
    """`let x = <read>` for a read of cardinality one (other than by id) or many."""

    name: str
    read: ir.Read


@dataclass
class ServiceStmt:
    service: str
    method: str
    args: tuple[ir.Expr, ...]
    mutates: tuple[str, ...]


@dataclass
class ApiStmt:
    """`resource.Command(…)` as a statement: a command of another context."""

    call: ir.ApiCall


@dataclass
class DeleteStmt:
    name: str
    repository: str
    aggregate: str


@dataclass
class IfLetFact:
    read: ir.Read | None
    value: ir.Expr | None


@dataclass
class StateWrite:
    """`field := value` on the workflow's state; `bind` when the field is the correlation key."""

    field: str
    value: ir.Expr
    bind: bool


@dataclass
class LocalWrite:
    """`var x = value` and `x := value` on that `var`: its type (the declared one, else the first
    value's) and the typed value."""

    name: str
    type: AnyType
    value: ir.Expr


@dataclass
class NotFoundFact:
    aggregate: str | None


StmtFact = (
    Load
    | Create
    | CallOp
    | OwnCall
    | ReadLoad
    | ServiceStmt
    | ApiStmt
    | DeleteStmt
    | IfLetFact
    | StateWrite
    | LocalWrite
    | NotFoundFact
)


@dataclass
class Trigger:
    """The event an event-triggered `create` or an `on` reacts to: its parameter, and the typed
    `by` value (None without `by`)."""

    event: ir.EventType
    param: str
    by: ir.Expr | None


@dataclass
class EmitFact:
    """`emit E { … }`: the event and the typed value of each field given."""

    event: str
    args: dict[str, ir.Expr]


@dataclass
class RetrievalFact:
    """`retrieval R(…) of A { where: C(args) }`: the criterion it runs and its typed arguments."""

    criterion: str
    args: tuple[ir.Expr, ...]


@dataclass
class FindFact:
    """`find byX(…): T`: the fields it matches (in parameter order) and how many it answers."""

    fields: tuple[str, ...]
    cardinality: Literal["one", "optional", "many"]


@dataclass(frozen=True)
class ResourceFact:
    """A resource whose settings hold: the context it binds, its timeout and retries."""

    target: str
    timeout_ms: int
    retries: int


@dataclass(frozen=True, slots=True)
class Reference:
    """A name as written (`span`) and the name of the declaration it resolved to (`target`, that
    declaration's name span): what an editor's go-to-definition follows (loom.lsp)."""

    span: Span
    target: Span


@dataclass
class Facts:
    types: dict[ast.TypeRef, AnyType] = field(default_factory=dict)
    exprs: dict[ast.Expr, ir.Expr] = field(default_factory=dict)  # root expressions, typed
    stmts: dict[ast.Stmt, StmtFact] = field(default_factory=dict)
    emits: dict[ast.Emit, EmitFact] = field(default_factory=dict)
    triggers: dict[ast.Create | ast.On, Trigger] = field(default_factory=dict)
    retrievals: dict[ast.Retrieval, RetrievalFact] = field(default_factory=dict)
    finds: dict[ast.RepoFind, FindFact] = field(default_factory=dict)
    channels: dict[ast.Channel, tuple[ir.EventType, ...]] = field(default_factory=dict)
    # the resources whose settings hold
    resources: dict[ast.Resource, ResourceFact] = field(default_factory=dict)
    # context name -> the deployable naming it (the first one, when two do); empty without any
    deployed: dict[str, ast.Deployable] = field(default_factory=dict)
    # the state field keying a workflow's instances (None: it keeps none); a projection's key field
    correlations: dict[ast.Workflow, str | None] = field(default_factory=dict)
    projection_keys: dict[ast.Projection, str] = field(default_factory=dict)
    # the parameters of a domain-service method that it calls operations on, in order
    service_mutates: dict[ast.ServiceMethod, tuple[str, ...]] = field(default_factory=dict)
    # the names resolved to declarations, in bodies (fields, enum members, events, operations,
    # receivers, state, timeouts) and elsewhere (a criterion's aggregate, a repository's filters,
    # a channel's events and source, the contexts a deployable or a resource names); the names of
    # types are in `types`, a repository's aggregate in the names pass's `repo_for`
    references: list[Reference] = field(default_factory=list)
