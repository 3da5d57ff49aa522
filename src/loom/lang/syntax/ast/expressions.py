"""The expressions, as written."""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang.diagnostics import Span


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
