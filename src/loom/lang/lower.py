"""Checked AST to IR. Runs only on a model without errors, so every lookup here succeeds.

Lowering is where the implicit parts of a workflow become explicit for the back ends: the exit
saves, the normalised `Agg.create` arguments (every input, in field order, defaults filled in), and
emit arguments in the event's field order.
"""

from __future__ import annotations

from loom.lang import ast
from loom.lang.check import Checker
from loom.lang.diagnostics import Span
from loom.lang.resolve import ContextSymbols, Program
from loom.lang.rules_workflow import CallOp, Create, Load
from loom.model import ir



def origin(span: Span) -> ir.Origin:
    return ir.Origin(span.file, span.line, span.column)


class _Lower:
    def __init__(self, prog: Program, ck: Checker) -> None:
        self.prog = prog
        self.ck = ck

    def e(self, node: ast.Expr) -> ir.Expr:
        return self.ck.exprs[id(node)]

    def t(self, ref: ast.TypeRef) -> ir.Type:
        return self.ck.types[id(ref)]  # type: ignore[return-value]

    def params(self, ps: list[ast.Param]) -> tuple[ir.Parameter, ...]:
        return tuple(ir.Parameter(p.name, self.t(p.type)) for p in ps)

    def model(self) -> ir.Model:
        return ir.Model(
            tuple(self.context(c) for c in self.prog.contexts.values()), tuple(self.prog.files)
        )

    def context(self, ctx: ContextSymbols) -> ir.Context:
        decls = ctx.decls
        return ir.Context(
            name=ctx.name,
            enums=tuple(
                ir.Enum(d.name, tuple(m for m, _ in d.members), origin(d.span))
                for d in decls
                if isinstance(d, ast.Enum)
            ),
            aggregates=tuple(self.aggregate(ctx, d) for d in decls if isinstance(d, ast.Aggregate)),
            repositories=tuple(
                ir.Repository(d.name, d.aggregate, origin(d.span))
                for d in decls
                if isinstance(d, ast.Repository)
            ),
            events=tuple(
                ir.Event(d.name, ctx.name, self.params(d.fields), origin(d.span))
                for d in decls
                if isinstance(d, ast.Event)
            ),
            workflows=tuple(self.workflow(ctx, d) for d in decls if isinstance(d, ast.Workflow)),
            origin=origin(ctx.span),
        )

    def aggregate(self, ctx: ContextSymbols, agg: ast.Aggregate) -> ir.Aggregate:
        return ir.Aggregate(
            name=agg.name,
            context=ctx.name,
            fields=tuple(
                ir.Field(
                    f.name,
                    self.t(f.type),
                    self.e(f.default) if f.default else None,
                    f.immutable,
                    origin(f.span),
                )
                for f in agg.fields
            ),
            derived=tuple(
                ir.Derived(d.name, self.t(d.type), self.e(d.value), origin(d.span))
                for d in agg.derived
            ),
            invariants=tuple(
                ir.Invariant(i.condition and self.e(i.condition), i.message, origin(i.span))
                for i in agg.invariants
            ),
            functions=tuple(
                ir.Function(
                    f.name, self.params(f.params), self.t(f.result), self.e(f.value), origin(f.span)
                )
                for f in agg.functions
            ),
            operations=tuple(self.operation(ctx, op) for op in agg.operations),
            origin=origin(agg.span),
        )

    def operation(self, ctx: ContextSymbols, op: ast.Operation) -> ir.Operation:
        body = tuple(self.stmt(ctx, s) for s in op.body)
        emits: list[str] = []
        for s in body:
            if isinstance(s, ir.Emit) and s.event not in emits:
                emits.append(s.event)
        return ir.Operation(
            op.name,
            self.params(op.params),
            self.e(op.when) if op.when else None,
            body,
            origin(op.span),
            tuple(emits),
        )

    def stmt(self, ctx: ContextSymbols, s: ast.Stmt) -> ir.Stmt:
        o = origin(s.span)
        if isinstance(s, ast.Precondition):
            return ir.Precondition(self.e(s.condition), s.message, o)
        if isinstance(s, ast.Assign):
            assert isinstance(s.target, ast.Name)
            return ir.Assign(s.target.name, s.op, self.e(s.value), o)  # type: ignore[arg-type]
        if isinstance(s, ast.Emit):
            name, given = self.ck.emits[id(s)]
            ev = ctx.events[name]
            return ir.Emit(name, ctx.name, tuple((f.name, given[f.name]) for f in ev.fields), o)
        if isinstance(s, ast.Return):
            return ir.Return(self.e(s.value), o)
        found = self.ck.stmts.get(id(s))
        if isinstance(s, ast.Let):
            if isinstance(found, Load):
                return ir.LoadById(s.name, found.repository, found.aggregate, found.id, o)
            if isinstance(found, Create):
                agg = ctx.aggregates[found.aggregate]
                args = tuple(
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
                return ir.CreateAggregate(s.name, found.aggregate, args, o)
            return ir.Let(s.name, self.e(s.value), o)
        assert isinstance(found, CallOp), s
        return ir.CallOperation(found.target, found.aggregate, found.operation, found.args, o)

    def workflow(self, ctx: ContextSymbols, wf: ast.Workflow) -> ir.Workflow:
        creates = []
        for c in wf.creates:
            body = [self.stmt(ctx, s) for s in c.body]
            saves = []
            for b in self.ck.bindings[id(c)]:
                if b.kind == "created" or (b.kind == "loaded" and b.mutated):
                    assert b.aggregate and b.repository
                    saves.append(ir.Save(b.name, b.repository, b.aggregate, b.kind == "created"))
            # The exit saves go just before a final `return`: its value is read inside the unit of
            # work, after the saves, and the back end answers it once the unit of work is done.
            at = len(body) - 1 if body and isinstance(body[-1], ir.Return) else len(body)
            body[at:at] = saves
            creates.append(
                ir.WorkflowCreate(
                    self.params(c.params),
                    self.t(c.result) if c.result else None,
                    tuple(body),
                    origin(c.span),
                )
            )
        return ir.Workflow(
            wf.name,
            ctx.name,
            wf.transactional,
            wf.isolation if wf.transactional else None,  # type: ignore[arg-type]
            tuple(creates),
            origin(wf.span),
        )


def lower(prog: Program, ck: Checker) -> ir.Model:
    return _Lower(prog, ck).model()
