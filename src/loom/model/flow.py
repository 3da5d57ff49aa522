"""The model's event flow, read once from the IR: who emits each event (directly, or through the
operations, factories, services and API calls a body runs), who consumes it, which channels carry
it, and which contexts call which over `resource { kind: api }`.

Every flow check reads this one `Flow`; it is built in one pass over every body, and the events a
body may set off are computed once per body (memoised), so building it is linear in the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeAlias

from loom.model import ir, walk

EventKey: TypeAlias = tuple[str, str]  # (context, event name)
UnitKey: TypeAlias = tuple[str, ...]  # ("op", ctx, aggregate, operation), ("factory", ctx, agg), …


@dataclass(frozen=True, slots=True)
class Body:
    """A piece of code that runs as one step: an operation, a factory, a service method, a
    handler, a timer, a workflow's create, reaction or timeout."""

    context: str
    label: str  # how a message names it: "operation `Order.cancel`"
    stmts: tuple[ir.Stmt, ...]
    origin: ir.Origin
    aggregate: str | None = None  # the aggregate whose own operations `CallOwnOperation` calls
    gated: bool = False  # a `when` or `requires` gate may refuse to run it
    # every statement, nested ones too, in source pre-order: walked once, read by every check
    flat: tuple[ir.Stmt, ...] = field(default=(), compare=False, repr=False)


def body_of(
    context: str,
    label: str,
    stmts: tuple[ir.Stmt, ...],
    origin: ir.Origin,
    aggregate: str | None = None,
    gated: bool = False,
) -> Body:
    return Body(context, label, stmts, origin, aggregate, gated, tuple(walk.body(stmts)))


@dataclass(frozen=True, slots=True)
class Consumer:
    """A reaction to an event: of a workflow (a reactor, or a process manager) or a projection."""

    context: str
    owner: str  # the workflow or projection
    kind: str  # "workflow", "process" or "projection"
    reaction: ir.Reaction
    body: Body


@dataclass(frozen=True, slots=True)
class ApiEdge:
    """A body of `caller` calling a handler of `callee` through a `resource { kind: api }`."""

    caller: str
    callee: str
    resource: str  # the binding it calls through, `directory` of `directory.TechnicianInfo(…)`
    origin: ir.Origin  # of the statement holding the call


@dataclass
class Flow:
    """What the flow checks read. Keys are `(context, event)`; lists are in source order."""

    model: ir.Model
    emits: dict[EventKey, list[tuple[Body, ir.Emit]]] = field(default_factory=dict)
    consumers: dict[EventKey, list[Consumer]] = field(default_factory=dict)
    channels: dict[EventKey, ir.Channel] = field(default_factory=dict)
    folded: set[EventKey] = field(default_factory=set)  # by an event-sourced workflow's `apply`
    api_calls: list[ApiEdge] = field(default_factory=list)
    units: dict[UnitKey, Body] = field(default_factory=dict)
    # every `Agg.create(…)`, by (context, aggregate): the initial states a create may give
    creates: dict[tuple[str, str], list[ir.CreateAggregate]] = field(default_factory=dict)
    # the contexts with a `resource { kind: api }`: only their bodies can call another's handler,
    # so only theirs are searched for calls (the expressions of every statement, else)
    calling: set[str] = field(default_factory=set)
    _sets_off: dict[UnitKey, frozenset[EventKey]] = field(default_factory=dict)

    def sets_off(self, body: Body) -> frozenset[EventKey]:
        """The events `body` may emit, itself or through what it calls (operations, factories,
        services, other contexts' handlers), on any path."""
        return self._events(body, set())

    def _events(self, body: Body, seen: set[int]) -> frozenset[EventKey]:
        if id(body) in seen:  # a call cycle (refused elsewhere): nothing more down this way
            return frozenset()
        seen.add(id(body))
        out: set[EventKey] = set()
        for stmt in body.flat:
            if isinstance(stmt, ir.Emit):
                out.add((stmt.context, stmt.event))
            for key in self.callees(body, stmt):
                callee = self.units.get(key)
                if callee is None:
                    continue
                cached = self._sets_off.get(key)
                if cached is None:
                    cached = self._events(callee, seen)
                    self._sets_off[key] = cached
                out |= cached
        return frozenset(out)

    def callees(self, body: Body, stmt: ir.Stmt) -> Iterator[UnitKey]:
        """The units `stmt` (itself, not the statements nested in it) runs."""
        ctx = body.context
        if isinstance(stmt, ir.CallOperation):
            yield ("op", ctx, stmt.aggregate, stmt.operation)
        elif isinstance(stmt, ir.CallOwnOperation) and body.aggregate is not None:
            yield ("op", ctx, body.aggregate, stmt.operation)
        elif isinstance(stmt, ir.CreateAggregate):
            yield ("factory", ctx, stmt.aggregate)
        elif isinstance(stmt, ir.CallService):
            yield ("service", ctx, stmt.service, stmt.method)
        if ctx in self.calling:
            for call in api_calls_of(stmt):
                yield ("handler", call.target, call.handler)

    def channel_external(self, event: EventKey) -> bool:
        """Whether the event rides a channel placed on a broker (`source:`), which systems outside
        the model may also read and write."""
        ch = self.channels.get(event)
        return ch is not None and ch.source is not None


def api_calls_of(stmt: ir.Stmt) -> Iterator[ir.ApiCall]:
    """The API calls of one statement's own expressions (not of the statements nested in it)."""
    for child in walk.children(stmt):
        if isinstance(child, ir.Expr | ir.Read):
            for e in walk.expressions(child):
                if isinstance(e, ir.ApiCall):
                    yield e


def bodies(ctx: ir.Context) -> Iterator[tuple[UnitKey | None, Body]]:
    """Every body of a context but its reactions (`build` reads those with their consumers), with
    its unit key when something can call it."""
    c = ctx.name
    for agg in ctx.aggregates:
        if agg.factory is not None:
            f = agg.factory
            label = f"the factory of `{agg.name}`"
            gated = f.requires is not None
            yield ("factory", c, agg.name), body_of(c, label, f.body, f.origin, agg.name, gated)
        for op in agg.operations:
            label = f"operation `{agg.name}.{op.name}`"
            gated = op.when is not None or op.requires is not None
            yield (
                ("op", c, agg.name, op.name),
                body_of(c, label, op.body, op.origin, agg.name, gated),
            )
    for svc in ctx.services:
        for m in svc.methods:
            label = f"`{svc.name}.{m.name}`"
            yield ("service", c, svc.name, m.name), body_of(c, label, m.body, m.origin)
    for h in ctx.handlers:
        label = f"{h.kind}Handler `{h.name}`"
        yield (
            ("handler", c, h.name),
            body_of(c, label, h.body, h.origin, None, h.requires is not None),
        )
    for timer in ctx.timers:
        yield None, body_of(c, f"timer `{timer.name}`", timer.body, timer.origin)
    for wf in ctx.workflows:
        for create in wf.creates:
            yield None, body_of(c, f"workflow `{wf.name}`", create.body, create.origin)
        for t in wf.timeouts:
            yield None, body_of(c, f"`{wf.name}`'s `on timeout {t.name}`", t.body, t.origin)


def reaction_body(context: str, owner: str, r: ir.Reaction) -> Body:
    label = f"`{owner}`'s `{r.kind}({r.event.context}.{r.event.name})`"
    return body_of(context, label, r.body, r.origin)


def build(model: ir.Model) -> Flow:
    """The flow of a whole model."""
    flow = Flow(model)
    flow.calling.update(ctx.name for ctx in model.contexts if ctx.resources)
    for ctx in model.contexts:
        for ch in ctx.channels:
            for ev in ch.events:
                flow.channels[(ev.context, ev.name)] = ch
        owners: list[tuple[str, str, tuple[ir.Reaction, ...]]] = []
        for wf in ctx.workflows:
            flow.folded.update((ctx.name, a.event) for a in wf.applies)
            owners.append((wf.name, "process" if wf.process else "workflow", wf.reactions))
        owners += [(p.name, "projection", p.reactions) for p in ctx.projections]
        for owner, kind, reactions in owners:
            for r in reactions:
                body = reaction_body(ctx.name, owner, r)
                consumer = Consumer(ctx.name, owner, kind, r, body)
                flow.consumers.setdefault((r.event.context, r.event.name), []).append(consumer)
                _read(flow, body)
        for unit, body in bodies(ctx):
            if unit is not None:
                flow.units[unit] = body
            _read(flow, body)
    return flow


def _read(flow: Flow, body: Body) -> None:
    """Note what `body` emits, creates and calls."""
    calling = body.context in flow.calling
    for stmt in body.flat:
        if isinstance(stmt, ir.Emit):
            flow.emits.setdefault((stmt.context, stmt.event), []).append((body, stmt))
        elif isinstance(stmt, ir.CreateAggregate):
            flow.creates.setdefault((body.context, stmt.aggregate), []).append(stmt)
        if calling and not isinstance(stmt, ir.Save | ir.SaveInstance):  # no origin, no call
            for call in api_calls_of(stmt):
                flow.api_calls.append(
                    ApiEdge(body.context, call.target, call.resource, stmt.origin)
                )
