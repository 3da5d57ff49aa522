"""Aggregates, and the repositories, criteria and retrievals that read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.expressions import Expr
from loom.lang.syntax.ast.members import (
    Derived,
    Factory,
    Field,
    Function,
    Invariant,
    Member,
    Operation,
    Param,
    Renamed,
    Unique,
)
from loom.lang.syntax.ast.types import TypeRef


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
