"""The statements of bodies, and the walk over a body's nested ones."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.expressions import Arg, Expr
from loom.lang.syntax.ast.types import TypeRef


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
class Var:
    """`var x = e` / `var x: T = e`: a binding of a workflow or handler body that `x := e` may
    reassign (a `let` never changes)."""

    name: str
    name_span: Span
    type: TypeRef | None
    value: Expr
    span: Span


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
    | Var
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
