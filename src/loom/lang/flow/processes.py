"""`loom.process-never-completes` and `loom.process-waits-unreachable`: process managers whose end,
or whose awaited event, no run of the model can reach.

A body of a process runs when something sets it off: a command `create` always can, a reaction
when its event is emitted (or brought in by a channel with a `source`), an `on timeout` when a body
that runs schedules it. A process completes only through a `complete` in such a body.
"""

from __future__ import annotations

from collections.abc import Iterator

from loom.lang.diagnostics import Sink
from loom.lang.flow.spans import Spans
from loom.model import ir, walk
from loom.model.flow import EventKey, Flow
from loom.model.states import StateMachine


def _bodies(wf: ir.Workflow, live: set[EventKey]) -> Iterator[tuple[tuple[ir.Stmt, ...], bool]]:
    """Each body of the process that is not a timeout, and whether something sets it off."""
    for create in wf.creates:
        yield create.body, True
    for r in wf.reactions:
        yield r.body, (r.event.context, r.event.name) in live


def _live_statements(wf: ir.Workflow, live: set[EventKey]) -> list[ir.Stmt]:
    """The statements of the bodies of `wf` that can run."""
    out: list[ir.Stmt] = []
    scheduled: set[str] = set()
    pending = [stmts for stmts, runs in _bodies(wf, live) if runs]
    timeouts = {t.name: t for t in wf.timeouts}
    while pending:
        stmts = pending.pop()
        for stmt in walk.body(stmts):
            out.append(stmt)
            if isinstance(stmt, ir.ScheduleTimeout) and stmt.name not in scheduled:
                scheduled.add(stmt.name)
                if stmt.name in timeouts:
                    pending.append(timeouts[stmt.name].body)
    return out


def check_processes(flow: Flow, machines: list[StateMachine], spans: Spans, sink: Sink) -> None:
    live = set(flow.emits) | {k for k in flow.channels if flow.channel_external(k)}
    dead_ops = _dead_operations(flow, machines)
    for ctx in flow.model.contexts:
        for wf in ctx.workflows:
            if not wf.process:
                continue
            if not any(isinstance(s, ir.CompleteInstance) for s in _live_statements(wf, live)):
                _never_completes(wf, spans, sink)
            for r in wf.reactions:
                key = (r.event.context, r.event.name)
                emits = flow.emits.get(key, [])
                if not emits or flow.channel_external(key):
                    continue  # never emitted at all: `loom.event-never-emitted`
                gates = [dead_ops.get(id(body)) for body, _ in emits]
                if all(g is not None for g in gates):
                    _waits_unreachable(wf, r, [g for g in gates if g], spans, sink)


def _never_completes(wf: ir.Workflow, spans: Spans, sink: Sink) -> None:
    ends = [
        s
        for s in walk.statements(*wf.creates, *wf.reactions, *wf.timeouts)
        if isinstance(s, ir.CompleteInstance)
    ]
    sink.report(
        "loom.process-never-completes",
        f"process `{wf.name}` never completes: "
        + ("no body that can run reaches `complete`" if ends else "no body says `complete`")
        + ", so each instance stays open, and its timeouts armed, for ever",
        spans.word(wf.origin, wf.name),
        "never completes",
        secondary=[(spans.at(s.origin), "never runs") for s in ends],
        help="end the process with `complete` where its outcome is known (its last awaited "
        "event, its deadline's `on timeout`), in a body that something sets off",
    )


def _waits_unreachable(
    wf: ir.Workflow,
    r: ir.Reaction,
    gates: list[tuple[str, StateMachine, ir.Operation]],
    spans: Spans,
    sink: Sink,
) -> None:
    label = f"{r.event.context}.{r.event.name}"
    sink.report(
        "loom.process-waits-unreachable",
        f"process `{wf.name}` waits for `{label}`, but only operations whose `when` gate cannot "
        "hold in any state their aggregate can reach emit it: it never arrives",
        spans.word(r.origin, r.event.name),
        "never arrives",
        secondary=[
            (
                spans.word(op.origin, op.name),
                f"`{m.aggregate.name}.{op.name}` emits it, gated on {why}",
            )
            for why, m, op in gates
        ],
        help="fix the gate (or the operations that should lead to its state), or wait for the "
        "event that really ends this step",
    )


def _dead_operations(
    flow: Flow, machines: list[StateMachine]
) -> dict[int, tuple[str, StateMachine, ir.Operation]]:
    """The bodies (by id) of the operations whose `when` cannot hold in any reachable state of a
    state machine of their aggregate, with what the gate asks and that machine."""
    out: dict[int, tuple[str, StateMachine, ir.Operation]] = {}
    for m in machines:
        for op, _ in m.moves:
            if op.when is None or any(m.can_run(op, s) for s in m.reachable):
                continue
            body = flow.units.get(("op", m.context, m.aggregate.name, op.name))
            if body is not None:
                out[id(body)] = (f"`{op.when.text}`", m, op)
    return out
