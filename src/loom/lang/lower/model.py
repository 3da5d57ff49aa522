"""Checked AST to IR. Runs only on a model without errors, so every lookup here succeeds.

Lowering is where the implicit parts of a workflow become explicit for the back ends: the saves
(see `bodies.py`), the instance binding of correlated workflows, the normalised `Agg.create`
arguments (every input, in order, defaults filled in), and emit arguments in the event's order.
"""

from __future__ import annotations

from typing import cast

from loom.lang.check.facts import CallOp, Facts, OwnCall
from loom.lang.lower.bodies import BodyLowerer, ir_type, origin
from loom.lang.names.symbols import ContextSymbols, Program
from loom.lang.syntax import ast
from loom.model import ir
from loom.model.ir import Resource
from loom.model.ir.topology import ChannelSource, Deployable
from loom.model.messaging import BrokerKind


def _names(settings: list[ast.ChannelSetting], key: str) -> tuple[str, ...]:
    """The names a (checked) setting lists, none when it is not given."""
    value = next((s.value for s in settings if s.key == key), [])
    return tuple(name for _, name, _ in value) if isinstance(value, list) else ()


class ModelLowerer:
    def __init__(self, prog: Program, facts: Facts, revision: str) -> None:
        self.prog = prog
        self.facts = facts
        self.revision = revision

    def e(self, node: ast.Expr) -> ir.Expr:
        return self.facts.exprs[node]

    def t(self, ref: ast.TypeRef) -> ir.Type:
        return ir_type(self.facts.types[ref])

    def params(self, ps: list[ast.Param]) -> tuple[ir.Parameter, ...]:
        return tuple(ir.Parameter(p.name, self.t(p.type)) for p in ps)

    def model(self) -> ir.Model:
        return ir.Model(
            tuple(self.context(c) for c in self.prog.contexts.values()),
            tuple(self.prog.files),
            self.revision,
            deployables=tuple(
                Deployable(d.name, _names(d.settings, "contexts"), origin(d.span))
                for d in self.prog.deployables.values()
            ),
            channel_sources=tuple(
                ChannelSource(
                    c.name, cast(BrokerKind, _names(c.settings, "kind")[0]), origin(c.span)
                )
                for c in self.prog.channel_sources.values()
            ),
        )

    def context(self, ctx: ContextSymbols) -> ir.Context:
        decls = ctx.decls
        return ir.Context(
            name=ctx.name,
            tenanted=ctx.tenanted is not None,
            enums=tuple(
                ir.Enum(
                    d.name,
                    tuple(m for m, _ in d.members),
                    origin(d.span),
                    tuple((d.members[i][0], r.name) for i, r in sorted(d.renamed_from.items())),
                    tuple(m for m, _ in d.members if m in d.terminal),
                )
                for d in decls
                if isinstance(d, ast.Enum)
            ),
            aggregates=tuple(self.aggregate(ctx, d) for d in decls if isinstance(d, ast.Aggregate)),
            repositories=tuple(
                self.repository(ctx, d) for d in decls if isinstance(d, ast.Repository)
            ),
            events=tuple(
                ir.Event(
                    d.name,
                    ctx.name,
                    self.fields(d.fields),
                    origin(d.span),
                    d.renamed_from.name if d.renamed_from else None,
                )
                for d in decls
                if isinstance(d, ast.Event)
            ),
            workflows=tuple(self.workflow(ctx, d) for d in decls if isinstance(d, ast.Workflow)),
            origin=origin(ctx.span),
            criteria=tuple(
                ir.Criterion(
                    d.name, d.aggregate, self.params(d.params), self.e(d.condition), origin(d.span)
                )
                for d in decls
                if isinstance(d, ast.Criterion)
            ),
            retrievals=tuple(
                ir.Retrieval(
                    d.name,
                    d.aggregate,
                    self.params(d.params),
                    self.facts.retrievals[d].criterion,
                    self.facts.retrievals[d].args,
                    origin(d.span),
                )
                for d in decls
                if isinstance(d, ast.Retrieval)
            ),
            handlers=tuple(self.handler(ctx, d) for d in decls if isinstance(d, ast.Handler)),
            services=tuple(self.service(ctx, d) for d in decls if isinstance(d, ast.DomainService)),
            values=tuple(
                ir.ValueObject(
                    d.name,
                    ctx.name,
                    self.fields(d.fields),
                    tuple(
                        ir.Invariant(self.e(i.condition), i.message, origin(i.span))
                        for i in d.invariants
                    ),
                    origin(d.span),
                )
                for d in decls
                if isinstance(d, ast.ValueObject)
            ),
            payloads=tuple(
                ir.Payload(
                    d.kind,  # type: ignore[arg-type]
                    d.name,
                    ctx.name,
                    self.fields(d.fields),
                    origin(d.span),
                )
                for d in decls
                if isinstance(d, ast.Payload)
            ),
            projections=tuple(
                self.projection(ctx, d) for d in decls if isinstance(d, ast.Projection)
            ),
            channels=tuple(self.channel(ctx, d) for d in decls if isinstance(d, ast.Channel)),
            timers=tuple(self.timer(ctx, d) for d in decls if isinstance(d, ast.Timer)),
            resources=tuple(self.resource(ctx, d) for d in decls if isinstance(d, ast.Resource)),
        )

    def resource(self, ctx: ContextSymbols, res: ast.Resource) -> Resource:
        fact = self.facts.resources[res]
        return Resource(
            res.name, ctx.name, fact.target, origin(res.span), fact.timeout_ms, fact.retries
        )

    def reaction(
        self,
        ctx: ContextSymbols,
        kind: str,
        node: ast.Create | ast.On,
        instance: bool,
        route: bool,
    ) -> ir.Reaction:
        """A starter (`kind="create"`), an `on` of a workflow (`route`: an instance must exist),
        or an `on` of a projection (its row is loaded or allocated)."""
        trig = self.facts.triggers[node]
        first: list[ir.Stmt] = []
        if trig.by is not None:
            o = origin(node.span)
            first.append(ir.RouteInstance(trig.by, o) if route else ir.BindInstance(trig.by, o))
        body = BodyLowerer(self.facts, ctx, instance=instance).body(node.body, first)
        return ir.Reaction(
            kind,  # type: ignore[arg-type]
            trig.event,
            trig.param,
            trig.by,
            body,
            origin(node.span),
        )

    def projection(self, ctx: ContextSymbols, p: ast.Projection) -> ir.Projection:
        return ir.Projection(
            p.name,
            ctx.name,
            self.fields(p.fields),
            self.facts.projection_keys[p],
            tuple(self.reaction(ctx, "on", on, True, False) for on in p.ons),
            origin(p.span),
            self.facts.exprs[p.filters[0]] if p.filters else None,
        )

    def channel(self, ctx: ContextSymbols, ch: ast.Channel) -> ir.Channel:
        values = {s.key: s.value for s in ch.settings}
        retention = values.get("retention")
        attempts = values.get("maxAttempts")
        backoff = values.get("backoff")
        return ir.Channel(
            ch.name,
            ctx.name,
            self.facts.channels.get(ch, ()),
            origin(ch.span),
            retention=retention[0][1] if isinstance(retention, list) else "work",  # type: ignore[arg-type]
            max_attempts=attempts if isinstance(attempts, int) else 5,
            backoff_ms=backoff if isinstance(backoff, tuple) else (1_000, 300_000),
            source=next(iter(_names(ch.settings, "source")), None),
        )

    def fields(self, fields: list[ast.Field]) -> tuple[ir.Field, ...]:
        """Fields of an aggregate, a workflow's state, a projection, an event or a record."""
        return tuple(
            ir.Field(
                f.name,
                self.t(f.type),
                self.e(f.default) if f.default is not None else None,
                f.immutable,
                origin(f.span),
                f.renamed_from.name if f.renamed_from else None,
                read_only=f.read_only,
            )
            for f in fields
        )

    def repository(self, ctx: ContextSymbols, d: ast.Repository) -> ir.Repository:
        finds = tuple(
            ir.RepositoryFind(
                f.name,
                self.params(f.params),
                self.facts.finds[f].fields,
                self.facts.finds[f].cardinality,
                origin(f.span),
            )
            for f in d.finds
        )
        return ir.Repository(
            d.name, d.aggregate, origin(d.span), finds, tuple(n for n, _ in d.filters)
        )

    def function(self, ctx: ContextSymbols, f: ast.Function) -> ir.Function:
        if f.value is not None:
            return ir.Function(
                f.name, self.params(f.params), self.t(f.result), self.e(f.value), origin(f.span)
            )
        low = BodyLowerer(self.facts, ctx)
        body = tuple(
            ir.Return(self.e(s.value), origin(s.span))
            if isinstance(s, ast.Return)
            else low.stmt(s, [])
            for s in f.body or []
        )
        return ir.Function(
            f.name, self.params(f.params), self.t(f.result), None, origin(f.span), body
        )

    def aggregate(self, ctx: ContextSymbols, agg: ast.Aggregate) -> ir.Aggregate:
        factory = agg.factory
        return ir.Aggregate(
            name=agg.name,
            context=ctx.name,
            fields=self.fields(agg.fields),
            derived=tuple(
                ir.Derived(d.name, self.t(d.type), self.e(d.value), origin(d.span))
                for d in agg.derived
            ),
            invariants=tuple(
                ir.Invariant(self.e(i.condition), i.message, origin(i.span)) for i in agg.invariants
            ),
            functions=tuple(self.function(ctx, f) for f in agg.functions),
            operations=tuple(self.operation(ctx, agg, op) for op in agg.operations),
            origin=origin(agg.span),
            crudish=agg.crudish,
            factory=ir.Factory(
                self.params(factory.params),
                tuple(self.stmt(ctx, s) for s in factory.body),
                origin(factory.span),
                requires=self.gate(factory.requires),
            )
            if factory is not None
            else None,
            unique=tuple(tuple(n for n, _ in u.fields) for u in agg.uniques),
            renamed_from=agg.renamed_from.name if agg.renamed_from else None,
        )

    def operation(self, ctx: ContextSymbols, agg: ast.Aggregate, op: ast.Operation) -> ir.Operation:
        body = tuple(self.stmt(ctx, s) for s in op.body) if not op.extern else ()
        emits: list[str] = []
        for s in _ir_walk(body):
            if isinstance(s, ir.Emit) and s.event not in emits:
                emits.append(s.event)
        for event in self._called_emits(agg, op, {op.name}):
            if event not in emits:
                emits.append(event)
        return ir.Operation(
            op.name,
            self.params(op.params),
            self.e(op.when) if op.when else None,
            body,
            origin(op.span),
            tuple(emits),
            private=op.private,
            extern=op.extern,
            result=self.t(op.result) if op.result is not None else None,
            requires=self.gate(op.requires),
            internal=op.internal,
        )

    def _called_emits(self, agg: ast.Aggregate, op: ast.Operation, seen: set[str]) -> list[str]:
        """Events raised by the operations `op` of `agg` calls on its own aggregate, transitively."""
        out: list[str] = []
        for s in _ast_walk(op.body):
            found = self.facts.stmts.get(s)
            if not isinstance(found, OwnCall):
                continue
            name = found.operation
            if name in seen:
                continue
            seen.add(name)
            callee = next(
                (m for m in agg.members if isinstance(m, ast.Operation) and m.name == name), None
            )
            if callee is None:
                continue
            out += [x.event for x in _ast_walk(callee.body) if isinstance(x, ast.Emit)]
            out += self._called_emits(agg, callee, seen)
        return out

    def stmt(self, ctx: ContextSymbols, s: ast.Stmt) -> ir.Stmt:
        """A statement of an operation, factory or service body (no saves there)."""
        if isinstance(s, ast.Return):
            return ir.Return(self.e(s.value), origin(s.span))
        return BodyLowerer(self.facts, ctx).stmt(s, [])

    def workflow(self, ctx: ContextSymbols, wf: ast.Workflow) -> ir.Workflow:
        corr = self.facts.correlations[wf]
        creates = []
        reactions = []
        for c in wf.creates:
            if c in self.facts.triggers:
                reactions.append(self.reaction(ctx, "create", c, corr is not None, False))
                continue
            first: list[ir.Stmt] = []
            param = next((p for p in c.params if p.name == corr), None)
            if param is not None:
                t = self.t(param.type)
                first.append(ir.BindInstance(ir.Param(param.name, t, param.name), origin(c.span)))
            body = BodyLowerer(self.facts, ctx, instance=corr is not None).body(c.body, first)
            creates.append(
                ir.WorkflowCreate(
                    self.params(c.params),
                    self.t(c.result) if c.result else None,
                    body,
                    origin(c.span),
                    requires=self.gate(c.requires),
                )
            )
        applies = []
        for ap in wf.applies:
            ev = self.t(ap.params[0].type)
            assert isinstance(ev, ir.EventType)
            applies.append(
                ir.Apply(
                    ev.name,
                    ap.params[0].name,
                    tuple(BodyLowerer(self.facts, ctx).stmt(s, []) for s in ap.body),
                    origin(ap.span),
                )
            )
        return ir.Workflow(
            wf.name,
            ctx.name,
            wf.transactional,
            wf.isolation if wf.transactional else None,  # type: ignore[arg-type]
            tuple(creates),
            origin(wf.span),
            state=self.fields(wf.state),
            correlation=corr,
            functions=tuple(self.function(ctx, f) for f in wf.functions),
            event_sourced=wf.event_sourced,
            applies=tuple(applies),
            reactions=tuple(reactions)
            + tuple(self.reaction(ctx, "on", on, corr is not None, True) for on in wf.ons),
            timeouts=tuple(
                ir.OnTimeout(
                    t.name,
                    BodyLowerer(self.facts, ctx, instance=True).body(t.body),
                    origin(t.span),
                )
                for t in wf.timeouts
            ),
            process=corr is not None and ast.is_process(wf),
            once=wf.once is not None,
            autocommit=wf.autocommit is not None,
        )

    def timer(self, ctx: ContextSymbols, tm: ast.Timer) -> ir.Timer:
        body = BodyLowerer(self.facts, ctx).body(tm.body)
        return ir.Timer(tm.name, ctx.name, tm.every_ms, body, origin(tm.span))

    def handler(self, ctx: ContextSymbols, h: ast.Handler) -> ir.Handler:
        return ir.Handler(
            h.kind,  # type: ignore[arg-type]
            h.name,
            ctx.name,
            self.params(h.params),
            self.t(h.result) if h.result else None,
            BodyLowerer(self.facts, ctx).body(h.body),
            origin(h.span),
            transactional=h.transactional,
            isolation=h.isolation if h.transactional else None,  # type: ignore[arg-type]
            autocommit=h.autocommit is not None,
            requires=self.gate(h.requires),
        )

    def gate(self, gate: ast.Expr | None) -> ir.Expr | None:
        """A `requires` gate of an entry point (factory, workflow `create`, handler)."""
        return self.e(gate) if gate is not None else None

    def service(self, ctx: ContextSymbols, svc: ast.DomainService) -> ir.DomainService:
        methods = []
        for m in svc.methods:
            if m.value is not None:
                body: tuple[ir.Stmt, ...] = (ir.Return(self.e(m.value), origin(m.value.span)),)
            else:
                out: list[ir.Stmt] = []
                for s in m.body or []:
                    found = self.facts.stmts.get(s)
                    if isinstance(found, CallOp):
                        out.append(
                            ir.CallOperation(
                                found.target,
                                found.aggregate,
                                found.operation,
                                found.args,
                                origin(s.span),
                            )
                        )
                    else:
                        out.append(self.stmt(ctx, s))
                body = tuple(out)
            methods.append(
                ir.ServiceMethod(
                    m.name,
                    self.params(m.params),
                    self.t(m.result) if m.result else None,
                    body,
                    self.facts.service_mutates[m],
                    origin(m.span),
                )
            )
        return ir.DomainService(svc.name, ctx.name, tuple(methods), origin(svc.span))


def _ir_walk(stmts: tuple[ir.Stmt, ...]) -> list[ir.Stmt]:
    """The statements of an operation body, those in `if` branches included."""
    out: list[ir.Stmt] = []
    for s in stmts:
        out.append(s)
        if isinstance(s, ir.If):
            out += _ir_walk(s.then) + _ir_walk(s.otherwise)
    return out


def _ast_walk(stmts: list[ast.Stmt]) -> list[ast.Stmt]:
    out: list[ast.Stmt] = []
    for s in stmts:
        out.append(s)
        if isinstance(s, ast.If):
            out += _ast_walk(s.then) + _ast_walk(s.otherwise or [])
    return out


def lower_model(prog: Program, facts: Facts, revision: str) -> ir.Model:
    return ModelLowerer(prog, facts, revision).model()
