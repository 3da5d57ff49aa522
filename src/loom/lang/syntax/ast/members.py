"""The members declarations are made of: parameters, fields (and their renames), derived values,
invariants, functions, and an aggregate's operations, unique keys and factory."""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.expressions import Expr
from loom.lang.syntax.ast.statements import Stmt
from loom.lang.syntax.ast.types import TypeRef


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
    read_only: bool = False  # `readOnly`: out of a crudish POST's and PATCH's reach


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
    requires: Expr | None = None  # `create(…) requires gate { … }`: who may create one


Member = Field | Derived | Invariant | Function | Operation | Unique | Factory
