"""Domain services and their methods."""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.expressions import Expr
from loom.lang.syntax.ast.members import Param
from loom.lang.syntax.ast.statements import Stmt
from loom.lang.syntax.ast.types import TypeRef


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
