"""Lowering of statement bodies, and the saves: where the implicit persistence of a workflow or
handler body becomes explicit for the back ends.

Saves are derived from the lowered statements themselves. Every block (the body, an `if let`
branch, a loop body) owns the aggregates it binds; at its end it saves those that were created, or
loaded and then mutated (an operation call or a mutating service call), in binding order, skipping
deleted ones. A `return` saves everything pending in its block and the blocks around it first. A
correlated workflow's instance row is saved last (SaveInstance).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang.check.facts import (
    ApiStmt,
    CallOp,
    Create,
    DeleteStmt,
    Facts,
    IfLetFact,
    Load,
    LocalWrite,
    NotFoundFact,
    OwnCall,
    ReadLoad,
    ServiceStmt,
    StateWrite,
)
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import AnyType, ErrorType
from loom.model import ir


def origin(span: Span) -> ir.Origin:
    return ir.Origin(span.file, span.line, span.column)


def ir_type(t: AnyType) -> ir.Type:
    """A checked type; never ERROR, since a model with an error is never lowered."""
    assert not isinstance(t, ErrorType), "a model with an error reached lowering"
    return t


@dataclass
class _Held:
    repository: str
    aggregate: str
    fresh: bool
    mutated: bool = False
    deleted: bool = False


@dataclass
class _Frame:
    held: dict[str, _Held] = field(default_factory=dict)

    def saves(self) -> list[ir.Stmt]:
        return [
            ir.Save(n, h.repository, h.aggregate, h.fresh)
            for n, h in self.held.items()
            if (h.fresh or h.mutated) and not h.deleted
        ]


class BodyLowerer:
    def __init__(self, facts: Facts, ctx: ContextSymbols, instance: bool = False) -> None:
        self.facts = facts
        self.ctx = ctx
        self.instance = instance  # a correlated workflow: SaveInstance at every exit

    def e(self, node: ast.Expr) -> ir.Expr:
        return self.facts.exprs[node]

    def body(
        self, stmts: list[ast.Stmt], first: list[ir.Stmt] | None = None
    ) -> tuple[ir.Stmt, ...]:
        return tuple(self.block(stmts, [], _Frame(), first or [], top=True))

    def _mark(self, frames: list[_Frame], name: str, what: str) -> None:
        for f in reversed(frames):
            if name in f.held:
                setattr(f.held[name], what, True)
                return

    def _exit(self, frames: list[_Frame]) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for f in frames:
            out += f.saves()
        if self.instance:
            out.append(ir.SaveInstance())
        return out

    def block(
        self,
        stmts: list[ast.Stmt],
        outer: list[_Frame],
        frame: _Frame,
        first: list[ir.Stmt],
        top: bool = False,
    ) -> list[ir.Stmt]:
        frames = [*outer, frame]
        out: list[ir.Stmt] = list(first)
        ended = False
        for s in stmts:
            if isinstance(s, ast.Return):
                out += self._exit(frames)
                out.append(ir.Return(self.e(s.value), origin(s.span)))
                ended = True
                break
            lowered = self.stmt(s, frames)
            out.append(lowered)
            if isinstance(lowered, ir.NotFoundStmt):
                ended = True
                break
            if (
                isinstance(lowered, (ir.IfLet, ir.If))
                and _ends(lowered.then)
                and _ends(lowered.otherwise)
            ):
                ended = True
                break
        if not ended:
            out += self._exit(frames[-1:]) if top else frame.saves()
        return out

    def stmt(self, s: ast.Stmt, frames: list[_Frame]) -> ir.Stmt:
        o = origin(s.span)
        frame = frames[-1] if frames else _Frame()
        found = self.facts.stmts.get(s)
        if isinstance(s, ast.Precondition):
            return ir.Precondition(self.e(s.condition), s.message, o)
        if isinstance(s, ast.Emit):
            emit = self.facts.emits[s]
            ev = self.ctx.events[emit.event]
            # a field the emit leaves out has a default (the checker made sure): it gets it here
            args: list[tuple[str, ir.Expr]] = []
            for f in ev.fields:
                if f.name in emit.args:
                    args.append((f.name, emit.args[f.name]))
                elif f.default is not None:
                    args.append((f.name, self.e(f.default)))
            return ir.Emit(emit.event, self.ctx.name, tuple(args), o)
        if isinstance(s, ast.Assign):
            if isinstance(found, StateWrite):
                if found.bind:
                    return ir.BindInstance(found.value, o)
                return ir.AssignState(found.field, found.value, o)
            if isinstance(found, LocalWrite):
                return ir.SetLocal(found.name, ir_type(found.type), found.value, o)
            assert isinstance(s.target, ast.Name)
            return ir.Assign(s.target.name, s.op, self.e(s.value), o)  # type: ignore[arg-type]
        if isinstance(s, ast.Let):
            if isinstance(found, Load):
                frame.held[s.name] = _Held(found.repository, found.aggregate, False)
                return ir.LoadById(
                    s.name, found.repository, found.aggregate, found.id, o, found.ignoring
                )
            if isinstance(found, ReadLoad):
                if found.read.cardinality == "one":
                    frame.held[s.name] = _Held(found.read.repository, found.read.aggregate, False)
                return ir.Load(s.name, found.read, o)
            if isinstance(found, Create):
                repo = self.ctx.repo_for[found.aggregate].name
                frame.held[s.name] = _Held(repo, found.aggregate, True)
                return ir.CreateAggregate(s.name, found.aggregate, self.create_args(found), o)
            return ir.Let(s.name, self.e(s.value), o)
        if isinstance(s, ast.Var):
            assert isinstance(found, LocalWrite)
            return ir.Var(s.name, ir_type(found.type), found.value, o)
        if isinstance(s, ast.IfLet):
            assert isinstance(found, IfLetFact)
            then = _Frame()
            if found.read is not None:
                then.held[s.name] = _Held(found.read.repository, found.read.aggregate, False)
            t = self.block(s.then, frames, then, [])
            other = self.block(s.otherwise, frames, _Frame(), []) if s.otherwise is not None else []
            return ir.IfLet(s.name, found.read, tuple(t), tuple(other), o, found.value)
        if isinstance(s, ast.If):
            t = self.block(s.then, frames, _Frame(), [])
            other = self.block(s.otherwise, frames, _Frame(), []) if s.otherwise is not None else []
            return ir.If(self.e(s.condition), tuple(t), tuple(other), o)
        if isinstance(s, ast.ForEach):
            items = self.e(s.items)
            body = _Frame()
            el = items.type.element if isinstance(items.type, ir.ListType) else None
            if isinstance(el, ir.AggregateType):
                repository = self.ctx.repo_for.get(el.name)
                if repository is not None:
                    body.held[s.name] = _Held(repository.name, el.name, False)
            return ir.ForEach(s.name, items, tuple(self.block(s.body, frames, body, [])), o)
        if isinstance(s, ast.NotFound):
            agg = found.aggregate if isinstance(found, NotFoundFact) else None
            return ir.NotFoundStmt(s.detail, agg, o)
        if isinstance(s, ast.Schedule):
            at = self.e(s.at) if s.at is not None else None
            after = self.e(s.after) if s.after is not None else None
            return ir.ScheduleTimeout(s.name, at, s.after_ms, o, after)
        if isinstance(s, ast.Cancel):
            return ir.CancelTimeout(s.name, o)
        if isinstance(s, ast.Complete):
            return ir.CompleteInstance(o)
        if isinstance(found, OwnCall):
            return ir.CallOwnOperation(found.operation, found.args, o)
        if isinstance(found, CallOp):
            self._mark(frames, found.target, "mutated")
            return ir.CallOperation(found.target, found.aggregate, found.operation, found.args, o)
        if isinstance(found, ServiceStmt):
            for n in found.mutates:
                self._mark(frames, n, "mutated")
            return ir.CallService(found.service, found.method, found.args, found.mutates, o)
        if isinstance(found, ApiStmt):
            return ir.CallApi(found.call, o)
        if isinstance(found, DeleteStmt):
            # Deleted in the block that binds it: never saved. Deleted in a nested branch or loop,
            # the exit save stays (another path may have mutated it) and the runtime skips the save
            # of an aggregate its unit of work deleted.
            if found.name in frame.held:
                frame.held[found.name].deleted = True
            return ir.Delete(found.name, found.repository, found.aggregate, o)
        raise AssertionError(f"unlowered statement {s!r}")

    def create_args(self, found: Create) -> tuple[tuple[str, ir.Expr | None], ...]:
        agg = self.ctx.aggregates[found.aggregate]
        if agg.factory is not None:
            return tuple((p.name, found.given.get(p.name)) for p in agg.factory.params)
        return tuple(
            (
                f.name,
                found.given[f.name]
                if f.name in found.given
                else self.e(f.default)
                if f.default is not None
                else None,
            )
            for f in agg.fields
        )


def _ends(stmts: tuple[ir.Stmt, ...]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ir.Return, ir.NotFoundStmt)):
        return True
    return isinstance(last, (ir.IfLet, ir.If)) and _ends(last.then) and _ends(last.otherwise)
