"""The members declarations are made of: parameters, fields, derived values, invariants and
functions."""

from __future__ import annotations

from dataclasses import dataclass

from loom.model.ir.expressions import Expr
from loom.model.ir.origin import Origin
from loom.model.ir.statements import Stmt
from loom.model.ir.types import Type


@dataclass(frozen=True, slots=True)
class Parameter:
    name: str
    type: Type


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    type: Type
    default: Expr | None
    immutable: bool
    origin: Origin
    # `renamed from OLD`: the field's name in the previous model (its stored value keeps its place)
    renamed_from: str | None = None
    # `readOnly`: a client never sets it: a crudish POST and PATCH refuse it (it starts at its
    # default; the factory and the operations change it)
    read_only: bool = False


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
