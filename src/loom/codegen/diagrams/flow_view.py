"""The `flow` view, event storming from the model (`loom.model.flow`, the reading the flow checks
make): what each entry point runs, the events it raises, who reacts to each, what they run and
raise in turn, across contexts (a box each) and deployables.

Nodes, with the ids the runtime's telemetry uses (`loom.model.telemetry`):
- the entry points: a workflow's command `create` (`Ctx.placeOrder`, the span of its route), a
  command or query handler (`Ctx.Charge`), a context timer (`Ctx.nightly`);
- what they run: an aggregate's operation (`Ctx.Order.cancel`, beside its span `Order.cancel`
  and `loom.context`), its factory (`Ctx.Order.create`), a domain service's method;
- an event (`Ctx.OrderPlaced`, its `loom.event`);
- a reaction (its `loom.reactor`, the consumer's name: `Ctx.Deadline.on(Payment.PaymentFailed)`)
  and a process's timeout (`Ctx.Deadline.payment`, its span `timeout Ctx.Deadline.payment`).
Arrows: a body to what it runs (dashed: another context's handler called over its API), to the
events it emits and to the timeouts it schedules; an event to each reaction to it, labelled with
the channel that carries it. `--from` keeps what one node sets off (`narrowed`).
"""

from __future__ import annotations

from loom.codegen.diagrams.graph import Edge, Graph, Group, Node, Shape
from loom.model import ir, naming
from loom.model.deployables import consumer_name, event_label
from loom.model.flow import Body, Flow, UnitKey, body_of, build
from loom.model.telemetry import qualified


def flow_graph(model: ir.Model) -> Graph:
    flow = build(model)
    drawing = _Drawing(flow)
    for ctx in model.contexts:
        drawing.graph.groups.append(Group(ctx.name, f"context {ctx.name}"))
    for ctx in model.contexts:
        drawing.context(ctx)
    return drawing.graph


class _Drawing:
    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self.graph = Graph("flowchart")
        self._nodes: set[str] = set()
        self._edges: set[tuple[str, str, str]] = set()
        self._done: set[str] = set()  # the nodes whose onward flow is drawn

    def node(self, id: str, label: str, group: str, shape: Shape = "box") -> str:
        if id not in self._nodes:
            self._nodes.add(id)
            self.graph.nodes.append(Node(id, label, shape, group))
        return id

    def edge(self, source: str, target: str, label: str = "", dashed: bool = False) -> None:
        if (source, target, label) not in self._edges:
            self._edges.add((source, target, label))
            self.graph.edges.append(Edge(source, target, label, dashed))

    def context(self, ctx: ir.Context) -> None:
        c = ctx.name
        for wf in ctx.workflows:
            for create in wf.creates:
                entry = self.node(
                    qualified(c, wf.name), f"POST /api/workflows/{naming.snake(wf.name)}", c
                )
                self.body(entry, body_of(c, wf.name, create.body, create.origin), wf)
        for h in ctx.handlers:
            if h.kind == "command":
                path = f"POST /api/commands/{naming.snake(h.name)}"
                self.unit(("handler", c, h.name), self.node(qualified(c, h.name), path, c))
        for timer in ctx.timers:
            entry = self.node(qualified(c, timer.name), f"timer {timer.name}", c)
            self.body(entry, body_of(c, timer.name, timer.body, timer.origin))
        for agg in ctx.aggregates:
            for op in agg.operations:
                if not (op.private or op.internal):  # its own route: an entry point too
                    self.unit(("op", c, agg.name, op.name), self._operation(c, agg.name, op.name))

    def _operation(self, context: str, aggregate: str, operation: str) -> str:
        return self.node(
            qualified(context, f"{aggregate}.{operation}"), f"{aggregate}.{operation}", context
        )

    def unit(self, key: UnitKey, node: str) -> None:
        body = self.flow.units.get(key)
        if body is not None and node not in self._done:
            self._done.add(node)
            self.body(node, body)

    def body(self, node: str, body: Body, workflow: ir.Workflow | None = None) -> None:
        """Draw what `body` (drawn as `node`) runs, emits and schedules, and onwards."""
        flow = self.flow
        for stmt in body.flat:
            for key in flow.callees(body, stmt):
                target = self._unit_node(key)
                if target is not None:
                    self.edge(node, target, dashed=key[0] == "handler" and key[1] != body.context)
                    self.unit(key, target)
            if isinstance(stmt, ir.Emit):
                self.event(node, (stmt.context, stmt.event))
            elif isinstance(stmt, ir.ScheduleTimeout) and workflow is not None:
                self.timeout(node, body.context, workflow, stmt.name)

    def _unit_node(self, key: UnitKey) -> str | None:
        kind, context = key[0], key[1]
        if kind == "op":
            return self._operation(context, key[2], key[3])
        if kind == "factory":
            return self._operation(context, key[2], "create")
        if kind == "service":
            return self.node(
                qualified(context, f"{key[2]}.{key[3]}"), f"{key[2]}.{key[3]}", context
            )
        if kind == "handler":
            handler = key[2]
            return self.node(qualified(context, handler), f"handler {handler}", context)
        return None

    def event(self, source: str, key: tuple[str, str]) -> None:
        context, name = key
        event = self.node(qualified(context, name), name, context, "round")
        self.edge(source, event)
        if event in self._done:
            return
        self._done.add(event)
        channel = self.flow.channels.get(key)
        label = qualified(channel.context, channel.name) if channel is not None else ""
        for consumer in self.flow.consumers.get(key, []):
            reactor = consumer_name(consumer.context, consumer.owner, consumer.reaction)
            r = consumer.reaction
            text = f"{consumer.owner}.{r.kind}({event_label(r.event, consumer.context)})"
            self.node(reactor, text, consumer.context)
            self.edge(event, reactor, label)
            if reactor not in self._done:
                self._done.add(reactor)
                workflow = _workflow(self.flow.model, consumer.context, consumer.owner)
                self.body(reactor, consumer.body, workflow)

    def timeout(self, source: str, context: str, workflow: ir.Workflow, name: str) -> None:
        process = qualified(context, workflow.name)
        node = self.node(f"{process}.{name}", f"{workflow.name} on timeout {name}", context)
        self.edge(source, node, "schedule")
        if node in self._done:
            return
        self._done.add(node)
        for t in workflow.timeouts:
            if t.name == name:
                self.body(node, body_of(context, name, t.body, t.origin), workflow)


def _workflow(model: ir.Model, context: str, name: str) -> ir.Workflow | None:
    ctx = next(c for c in model.contexts if c.name == context)
    return next((w for w in ctx.workflows if w.name == name), None)


def narrowed(graph: Graph, start: str) -> Graph | None:
    """What node `start` (its id, or its label: `POST /api/workflows/place_order`) sets off:
    the nodes its arrows reach, the arrows between them, the groups holding them. None when no
    node is `start`."""
    ids = {n.id for n in graph.nodes}
    first = start if start in ids else next((n.id for n in graph.nodes if n.label == start), None)
    if first is None:
        return None
    out: dict[str, list[str]] = {}
    for e in graph.edges:
        out.setdefault(e.source, []).append(e.target)
    seen, todo = {first}, [first]
    while todo:
        for nxt in out.get(todo.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    nodes = [n for n in graph.nodes if n.id in seen]
    groups = {n.group for n in nodes}
    return Graph(
        graph.kind,
        [g for g in graph.groups if g.id in groups],
        nodes,
        [e for e in graph.edges if e.source in seen and e.target in seen],
    )
