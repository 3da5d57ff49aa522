"""The `states` view: each aggregate's state machine and each process manager's.

An aggregate's machines are `loom.model.states`' (the flow checks judge the same ones): an enum
field its operations assign, its states the enum's members, its start the field's default and what
its factory or an `Agg.create(...)` gives it, a move for each operation from each state its `when`
gate lets it run in to each member it (or an operation of its own it calls) assigns. A private
operation runs only inside its callers, so it is drawn as theirs; a move that leaves the state as
it was is not drawn.

A process manager's machine has the two states its instances are counted in
(`loom_process_instances{state}`): `running` and `completed`. Its starters enter `running`; each
reaction and `on timeout` stays there or, when its body says `complete`, ends in `completed`
(both, when it completes only in a branch); labels name the timeouts it schedules and cancels.
Unless the workflow is `once`, a starter after `complete` runs it again.
"""

from __future__ import annotations

from loom.codegen.diagrams.graph import Edge, Graph, Group, Node
from loom.model import ir, walk
from loom.model.deployables import event_label
from loom.model.flow import build
from loom.model.states import StateMachine, state_machines
from loom.model.telemetry import qualified

_START = ":start"  # the suffix of a machine's start pseudo-node (no model name holds a `:`)
_END = ":end"


def states_graph(model: ir.Model) -> Graph:
    graph = Graph("states")
    machines: dict[str, list[StateMachine]] = {}
    for machine in state_machines(build(model)):
        machines.setdefault(machine.context, []).append(machine)
    for ctx in model.contexts:
        for machine in machines.get(ctx.name, []):
            _aggregate_machine(graph, machine)
        for workflow in ctx.workflows:
            if workflow.process:
                _process_machine(graph, ctx, workflow)
    return graph


def _aggregate_machine(graph: Graph, machine: StateMachine) -> None:
    members = machine.enum.members
    aggregate, field = machine.aggregate.name, machine.field.name
    name = f"{machine.context}.{aggregate}.{field}"
    graph.groups.append(Group(name, f"{machine.context}.{aggregate} {field}"))
    graph.nodes.append(Node(name + _START, "", "start", name))
    graph.nodes += [Node(f"{name}.{m}", m, "round", name) for m in members]
    for m in members:
        if m in machine.initial:
            graph.edges.append(Edge(name + _START, f"{name}.{m}"))
    moving = {
        (op.name, source): targets
        for source in members
        for op, targets in machine.transitions[source]
    }
    for op, _ in machine.moves:
        if op.private:
            continue  # it runs only inside the operations that call it: drawn as theirs
        for source in members:
            targets = moving.get((op.name, source), frozenset())
            for target in members:
                if target in targets and target != source:
                    graph.edges.append(Edge(f"{name}.{source}", f"{name}.{target}", op.name))


def process_machine(ctx: ir.Context, workflow: ir.Workflow) -> Graph:
    """The state machine of one process workflow, alone (what the operators' console draws)."""
    graph = Graph("states")
    _process_machine(graph, ctx, workflow)
    return graph


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
