"""Aggregates, their operations and factory, and the repositories that read them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loom.model.ir.expressions import Expr
from loom.model.ir.members import Derived, Field, Function, Invariant, Parameter
from loom.model.ir.origin import Origin
from loom.model.ir.statements import Stmt
from loom.model.ir.types import Type


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
    # `create(…) requires gate`: over the principal and the parameters, checked first (403)
    requires: Expr | None = None


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
        """The fields a crudish update may change: every field neither immutable nor read-only."""
        return tuple(f for f in self.fields if not (f.immutable or f.read_only))


@dataclass(frozen=True, slots=True)
class Repository:
    name: str
    aggregate: str
    origin: Origin
    finds: tuple[RepositoryFind, ...] = ()
    # `filter C`: parameterless criteria of the aggregate that every read through it applies
    filters: tuple[str, ...] = ()
