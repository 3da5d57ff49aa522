"""The `states` view: each aggregate's state machine and each process manager's.

An aggregate's machine is one of its enum fields that an operation assigns, or that is named
`status`: its states are the enum's members; it starts in the field's default and in the members
its factory or an `Agg.create(...)` of its context gives it. An operation moves it from each state
its `when` gate lets it run in (`gates.may_run`; no gate: every state) to each member that its
body, or an operation of its own it calls, assigns to the field. A private operation runs only
inside its callers, so it is drawn as theirs; a move that leaves the state as it was is not drawn.

A process manager's machine has the two states its instances are counted in
(`loom_process_instances{state}`): `running` and `completed`. Its starters enter `running`; each
reaction and `on timeout` stays there or, when its body says `complete`, ends in `completed`
(both, when it completes only in a branch); labels name the timeouts it schedules and cancels.
Unless the workflow is `once`, a starter after `complete` runs it again.
"""

from __future__ import annotations

from loom.codegen.diagrams.gates import may_run
from loom.codegen.diagrams.graph import Edge, Graph, Group, Node
from loom.model import ir, walk
from loom.model.deployables import event_label
from loom.model.telemetry import qualified

_START = ":start"  # the suffix of a machine's start pseudo-node (no model name holds a `:`)
_END = ":end"


def states_graph(model: ir.Model) -> Graph:
    graph = Graph("states")
    for ctx in model.contexts:
        creates: dict[str, list[ir.CreateAggregate]] = {}  # by aggregate, read in one walk
        for s in walk.statements(ctx):
            if isinstance(s, ir.CreateAggregate):
                creates.setdefault(s.aggregate, []).append(s)
        for aggregate in ctx.aggregates:
            for field in _state_fields(aggregate):
                initial = _initial(model, aggregate, field, creates.get(aggregate.name, []))
                _aggregate_machine(graph, model, ctx, aggregate, field, initial)
        for workflow in ctx.workflows:
            if workflow.process:
                _process_machine(graph, ctx, workflow)
    return graph


def _state_fields(aggregate: ir.Aggregate) -> list[ir.Field]:
    assigned = {
        s.field
        for op in aggregate.operations
        for s in walk.body(op.body)
        if isinstance(s, ir.Assign)
    }
    return [
        f
        for f in aggregate.fields
        if isinstance(f.type, ir.EnumType) and (f.name in assigned or f.name == "status")
    ]


def _aggregate_machine(
    graph: Graph,
    model: ir.Model,
    ctx: ir.Context,
    aggregate: ir.Aggregate,
    field: ir.Field,
    initial: list[str],
) -> None:
    assert isinstance(field.type, ir.EnumType)
    members = _enum(model, field.type).members
    machine = f"{ctx.name}.{aggregate.name}.{field.name}"
    graph.groups.append(Group(machine, f"{ctx.name}.{aggregate.name} {field.name}"))
    graph.nodes.append(Node(machine + _START, "", "start", machine))
    graph.nodes += [Node(f"{machine}.{m}", m, "round", machine) for m in members]
    for m in initial:
        graph.edges.append(Edge(machine + _START, f"{machine}.{m}"))
    seen: set[tuple[str, str, str]] = set()
    for op in aggregate.operations:
        if op.private:
            continue  # it runs only inside the operations that call it: drawn as theirs
        for source in members:
            for target in _moves(aggregate, op, field.name, source, members, frozenset()):
                if target != source and (source, target, op.name) not in seen:
                    seen.add((source, target, op.name))
                    graph.edges.append(Edge(f"{machine}.{source}", f"{machine}.{target}", op.name))


def _enum(model: ir.Model, enum: ir.EnumType) -> ir.Enum:
    return next(c for c in model.contexts if c.name == enum.context).enum(enum.name)


def _assigned(value: ir.Expr | None, members: tuple[str, ...]) -> tuple[str, ...]:
    """The members a value assigned to the field may be: the members it names (`Paid`, `ok ?
    Paid : Cancelled`), else any of them."""
    return _named(value) or members


def _named(value: ir.Expr | None) -> tuple[str, ...]:
    """The members an enum value is one of, when it names them all; else none."""
    if isinstance(value, ir.EnumMember):
        return (value.member,)
    if isinstance(value, ir.Conditional):
        then, otherwise = _named(value.then), _named(value.otherwise)
        return (*then, *otherwise) if then and otherwise else ()
    return ()


def _initial(
    model: ir.Model,
    aggregate: ir.Aggregate,
    field: ir.Field,
    creates: list[ir.CreateAggregate],
) -> list[str]:
    """The members the field may hold when the aggregate is created, in the enum's order: its
    default, what its factory assigns, and the members the `Agg.create(...)` calls of its
    context (`creates`; only its own context creates it) give it."""
    found = set(_named(field.default))
    if aggregate.factory is not None:
        for s in walk.body(aggregate.factory.body):
            if isinstance(s, ir.Assign) and s.field == field.name:
                found.update(_named(s.value))
    else:
        for create in creates:
            found.update(m for name, v in create.args if name == field.name for m in _named(v))
    assert isinstance(field.type, ir.EnumType)
    return [m for m in _enum(model, field.type).members if m in found]


def _moves(
    aggregate: ir.Aggregate,
    op: ir.Operation,
    field: str,
    state: str,
    members: tuple[str, ...],
    calling: frozenset[str],
) -> list[str]:
    """The members `op` may leave the field holding when it runs in `state` (none when its gate
    refuses it there), through its own assignments and those of the operations it calls."""
    if not may_run(op.when, aggregate, field, state):
        return []
    out: list[str] = []
    for s in walk.body(op.body):
        if isinstance(s, ir.Assign) and s.field == field:
            out += _assigned(s.value, members)
        elif isinstance(s, ir.CallOwnOperation) and s.operation not in calling:
            callee = next(o for o in aggregate.operations if o.name == s.operation)
            out += _moves(aggregate, callee, field, state, members, calling | {op.name})
    return out


def _process_machine(graph: Graph, ctx: ir.Context, workflow: ir.Workflow) -> None:
    process = qualified(ctx.name, workflow.name)  # its `loom.process`
    running, completed = f"{process}.running", f"{process}.completed"
    graph.groups.append(Group(process, f"process {process}"))
    graph.nodes += [
        Node(process + _START, "", "start", process),
        Node(running, "running", "round", process),
        Node(completed, "completed", "round", process),
    ]
    if workflow.once:
        graph.nodes.append(Node(process + _END, "", "end", process))
    # (label, body) of what starts an instance, and of what acts on a running one
    starters: list[tuple[str, tuple[ir.Stmt, ...]]] = [("create", c.body) for c in workflow.creates]
    steps: list[tuple[str, tuple[ir.Stmt, ...]]] = []
    for r in workflow.reactions:
        label = f"{r.kind}({event_label(r.event, ctx.name)})"
        (starters if r.kind == "create" else steps).append((label, r.body))
    steps += [(f"timeout {t.name}", t.body) for t in workflow.timeouts]
    for label, body in starters:
        graph.edges.append(Edge(process + _START, running, _with_actions(label, body)))
    for label, body in steps:
        text = _with_actions(label, body)
        # a `complete` of the body itself always runs (a refusal before it undoes the step)
        always = any(isinstance(s, ir.CompleteInstance) for s in body)
        sometimes = any(isinstance(s, ir.CompleteInstance) for s in walk.body(body))
        if not always:
            graph.edges.append(Edge(running, running, text))
        if sometimes:
            graph.edges.append(Edge(running, completed, text))
    if workflow.once:
        graph.edges.append(Edge(completed, process + _END))
    else:
        for label, body in starters:
            graph.edges.append(Edge(completed, running, _with_actions(label, body)))


def _with_actions(label: str, body: tuple[ir.Stmt, ...]) -> str:
    """`label`, then what the body does to the instance's timeouts: `on(X) / cancel payment`."""
    actions = []
    for s in walk.body(body):
        if isinstance(s, ir.ScheduleTimeout):
            actions.append(f"schedule {s.name}")
        elif isinstance(s, ir.CancelTimeout):
            actions.append(f"cancel {s.name}")
    return f"{label} / {', '.join(actions)}" if actions else label
