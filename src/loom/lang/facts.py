"""What the workflow-body rules learn about a statement, for `lower.py` to turn into IR.

The checker keys these on the AST statement (`Checker.stmts[id(stmt)]`).
"""

from __future__ import annotations

from dataclasses import dataclass

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
    target: str
    aggregate: str
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
class NotFoundFact:
    aggregate: str | None


@dataclass
class Trigger:
    """The event an event-triggered `create` or an `on` reacts to: its parameter, and the typed
    `by` value (None without `by`)."""

    event: ir.EventType
    param: str
    by: ir.Expr | None
