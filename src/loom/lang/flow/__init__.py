"""Pass 5, flow: checks of the whole model's event flow across contexts and deployables, its
aggregates' state machines and its process managers (docs/diagnostics.md, "Flow checks").

They read the lowered model (`ir.Model`), not the checked symbols: what they follow (which body
emits what, through which operations, factories, services and API calls; which reaction takes it;
which channel carries it) is only whole there. A model with errors never gets here, and every
finding is a warning but a cycle of API calls (`loom.context-cycle`), so a model that lowered still
builds. `check_flow` is the one entry; its result, the flow and the state machines, is what a
diagram of the model would draw.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loom.lang.diagnostics import Sink
from loom.lang.flow.context_cycles import check_api_cycles, check_event_cycles
from loom.lang.flow.events import check_events, check_reaction_loops, event_declarations
from loom.lang.flow.processes import check_processes
from loom.lang.flow.spans import Spans
from loom.lang.flow.states import check_states
from loom.model import ir
from loom.model.flow import Flow, build
from loom.model.states import StateMachine, state_machines


@dataclass(frozen=True, slots=True)
class FlowResult:
    flow: Flow
    machines: tuple[StateMachine, ...]


def check_flow(model: ir.Model, sources: Mapping[str, str], sink: Sink) -> FlowResult:
    """Report the flow checks' findings on the model to `sink`."""
    spans = Spans(sources)
    flow = build(model)
    events = event_declarations(model)
    machines = state_machines(flow)
    check_events(flow, events, spans, sink)
    check_reaction_loops(flow, spans, sink)
    check_api_cycles(flow, spans, sink)
    check_event_cycles(flow, events, spans, sink)
    check_states(machines, spans, sink)
    check_processes(flow, machines, spans, sink)
    return FlowResult(flow, tuple(machines))


__all__ = ["FlowResult", "StateMachine", "check_flow"]
