"""The resolved, lowered model that back ends consume.

The front end (`loom.lang`) produces it only for a model without errors, so a back end may assume that
every name is resolved, every expression is typed and every rule of the language holds. Names keep the
spelling of the model (`creditLimit`); each back end applies its own casing.

Everything here is immutable and ordered as in the source, so that generation is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

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

Primitive: TypeAlias = Literal["string", "int", "decimal", "bool", "datetime", "date"]


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    name: Primitive


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


Type: TypeAlias = (
    PrimitiveType | IdType | EnumType | ListType | OptionalType | AggregateType | EventType | VoidType
)

STRING = PrimitiveType("string")
INT = PrimitiveType("int")
DECIMAL = PrimitiveType("decimal")
BOOL = PrimitiveType("bool")
DATETIME = PrimitiveType("datetime")
DATE = PrimitiveType("date")
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
class FunctionCall:
    """A call of a pure `function` of the enclosing aggregate (or, later, workflow)."""

    function: str
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class ListLiteral:
    items: tuple[Expr, ...]
    type: Type
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


Stmt: TypeAlias = (
    Precondition | Assign | Let | Emit | Return | LoadById | CreateAggregate | CallOperation | Save
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


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Type
    default: Expr | None
    immutable: bool
    origin: Origin


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
    name: str
    params: tuple[Parameter, ...]
    result: Type
    value: Expr
    origin: Origin


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    params: tuple[Parameter, ...]
    when: Expr | None
    body: tuple[Stmt, ...]
    origin: Origin
    emits: tuple[str, ...] = ()


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

    @property
    def create_inputs(self) -> tuple[Field, ...]:
        """The inputs `Agg.create(...)` binds to, in order (all stored fields, for now)."""
        return self.fields


@dataclass(frozen=True, slots=True)
class Repository:
    name: str
    aggregate: str
    origin: Origin


@dataclass(frozen=True, slots=True)
class Event:
    name: str
    context: str
    fields: tuple[Parameter, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class WorkflowCreate:
    params: tuple[Parameter, ...]
    result: Type | None
    body: tuple[Stmt, ...]
    origin: Origin


Isolation: TypeAlias = Literal["read_committed", "repeatable_read", "serializable"]


@dataclass(frozen=True, slots=True)
class Workflow:
    name: str
    context: str
    transactional: bool
    isolation: Isolation | None
    creates: tuple[WorkflowCreate, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class Context:
    name: str
    enums: tuple[Enum, ...]
    aggregates: tuple[Aggregate, ...]
    repositories: tuple[Repository, ...]
    events: tuple[Event, ...]
    workflows: tuple[Workflow, ...]
    origin: Origin

    def aggregate(self, name: str) -> Aggregate:
        return next(a for a in self.aggregates if a.name == name)

    def repository_for(self, aggregate: str) -> Repository | None:
        return next((r for r in self.repositories if r.aggregate == aggregate), None)


@dataclass(frozen=True, slots=True)
class Model:
    """A whole model: every context of every file given, in first-appearance order."""

    contexts: tuple[Context, ...]
    sources: tuple[str, ...] = field(default=())
