"""Workflows and their members, and the other bodies in the workflow vocabulary: command and
query handlers, projections, timers."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang.diagnostics import Span
from loom.lang.syntax.ast.expressions import Expr
from loom.lang.syntax.ast.members import Field, Function, Param
from loom.lang.syntax.ast.statements import Cancel, Complete, Schedule, Stmt, walk_stmts
from loom.lang.syntax.ast.types import TypeRef


@dataclass(eq=False)
class Handler:
    kind: str  # "command" | "query"
    name: str
    name_span: Span
    params: list[Param]
    result: TypeRef | None
    transactional: bool
    isolation: str | None
    isolation_span: Span | None
    body: list[Stmt]
    span: Span
    autocommit: Span | None = None  # `commandHandler X(…) autocommit { … }`, where written
    requires: Expr | None = None  # `commandHandler X(…) requires gate { … }`: who may call it


@dataclass(eq=False)
class Apply:
    params: list[Param]
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class Create:
    params: list[Param]
    result: TypeRef | None
    body: list[Stmt]
    span: Span
    # `create(e: Event) by e.field { … }`: the correlation value of an event-triggered starter
    by: Expr | None = None
    requires: Expr | None = None  # `create(…) requires gate { … }`: who may start the workflow


@dataclass(eq=False)
class On:
    """`on(e: Event) [by e.field] { … }`: a reaction of a workflow or a projection."""

    params: list[Param]
    by: Expr | None
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class OnTimeout:
    """`on timeout NAME { … }`: the handler of a timeout of a correlated workflow."""

    name: str
    name_span: Span
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class Timer:
    """`timer NAME every 1h { … }`: a context's recurring sweep, a body like a commandHandler's."""

    name: str
    name_span: Span
    every_ms: int
    every_span: Span
    body: list[Stmt]
    span: Span


@dataclass(eq=False)
class Handle:
    """A leftover `handle` member: parsed only so that it can be refused with a precise message."""

    name: str
    name_span: Span
    span: Span


@dataclass(eq=False)
class Workflow:
    name: str
    name_span: Span
    transactional: bool
    isolation: str | None
    isolation_span: Span | None
    creates: list[Create]
    handles: list[Handle]
    span: Span
    event_sourced: bool = False
    state: list[Field] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    applies: list[Apply] = field(default_factory=list)
    ons: list[On] = field(default_factory=list)
    timeouts: list[OnTimeout] = field(default_factory=list)
    once: Span | None = None  # `workflow X once`: the modifier, where written
    # `workflow X autocommit`: each save commits on its own, chosen (not the default left as is)
    autocommit: Span | None = None


@dataclass(eq=False)
class Projection:
    """`projection Name { key: X id  n: int = 0  on(e: Event) by e.x { n := n + 1 } }`: a read
    model folded from events, one row per key, served over HTTP only."""

    name: str
    name_span: Span
    fields: list[Field]
    ons: list[On]
    span: Span
    # `filter <condition>`: the read rule of its routes (one at most; the checker says so)
    filters: list[Expr] = field(default_factory=list)


def is_process(wf: Workflow) -> bool:
    """A process manager: a workflow with `on timeout` handlers, or whose bodies schedule,
    cancel or complete (its instance then also answers `ended` and `timeouts`)."""
    bodies = [c.body for c in wf.creates] + [o.body for o in wf.ons]
    return bool(wf.timeouts) or any(
        isinstance(s, (Schedule, Cancel, Complete)) for b in bodies for s in walk_stmts(b)
    )
