"""`console.json`: what the operators' console draws of the model, written beside `main.py`.

A pure function of the model and the contexts the service holds: for each process workflow (by
its `loom.process` name, `Desk.FollowUp`), its state machine as the `states` diagram draws it
(`loom.codegen.diagrams.states_view.process_machine`): nodes with their ids, labels and shapes,
labelled edges. The admin route of an instance answers it with the instance's state marked
(docs/processes.md#instances-for-operators). And per event the service emits or consumes, what
will run when it is delivered (`console_events.py`): the console's redrive dialog shows it, and
`GET /api/admin/events/{event}/consumers` answers it.

Under `model`, the console's Model screen (`model_section`): the context map and the event flow
(`loom diagram`'s `context` and `flow` views) of the whole model, and for each node the ids of
the elements whose live counts it shows (docs/console.md#model).

Written for a service with processes or channels: the ones with dead letters to redrive.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from loom.codegen.diagrams.context_view import context_graph
from loom.codegen.diagrams.flow_view import flow_graph
from loom.codegen.diagrams.graph import Graph, Node
from loom.codegen.diagrams.states_view import process_machine
from loom.codegen.python.console_events import events_section
from loom.codegen.python.model_info import ModelInfo
from loom.model import ir
from loom.model.deployables import consumers
from loom.model.telemetry import qualified

CONSOLE_FILE = "console.json"


def has_console(info: ModelInfo) -> bool:
    """Whether the service gets a `console.json`: it has processes (their machines) or channels
    (the Model screen's counts); the others have no admin route to count with."""
    return bool(info.channels()) or any(w.process for c in info.held() for w in c.workflows)


def console_document(model: ir.Model, held: Collection[str] | None) -> dict[str, Any]:
    processes: dict[str, Any] = {}
    for ctx in model.contexts:
        if held is not None and ctx.name not in held:
            continue
        for workflow in ctx.workflows:
            if not workflow.process:
                continue
            graph = process_machine(ctx, workflow)
            processes[qualified(ctx.name, workflow.name)] = {
                "nodes": [{"id": n.id, "label": n.label, "shape": n.shape} for n in graph.nodes],
                "edges": [
                    {"source": e.source, "target": e.target, "label": e.label} for e in graph.edges
                ],
            }
    return {
        "processes": processes,
        "events": events_section(model, held),
        "model": model_section(model, held),
    }


def model_section(model: ir.Model, held: Collection[str] | None) -> dict[str, Any]:
    """The context map and the event flow of the whole model, each node with `counts`: the ids
    (as the runtime's telemetry names them: `loom.process`, channel, `loom.event`, `loom.reactor`,
    a timeout's `Process.name`) whose running instances, pending rows and dead letters it shows;
    `screen`: the console page that lists them (null: none); `held`: whether its context is this
    service's (`held`, None: all), else it counts nothing here (another deployable holds its
    rows). A context counts its processes, channels and reactors; a flow node itself, and the
    first node of a process (its `create` entry, else its first reaction) its instances."""
    processes = [
        qualified(c.name, w.name) for c in model.contexts for w in c.workflows if w.process
    ]
    carried = {
        qualified(e.context, e.name) for c in model.contexts for ch in c.channels for e in ch.events
    }
    failing = {c.name for c in consumers(model)}  # reactors and timeouts: their dead letters
    failing |= {
        f"{qualified(c.name, w.name)}.{t.name}"
        for c in model.contexts
        for w in c.workflows
        for t in w.timeouts
    }
    context: dict[str, tuple[list[str], str | None]] = {}
    for ctx in model.contexts:
        own = [p for p in processes if p.startswith(ctx.name + ".")]
        channels = [qualified(ctx.name, ch.name) for ch in ctx.channels]
        reactors = [c.name for c in consumers(model) if c.context == ctx.name]
        screen = "processes" if len(own) > 1 else f"processes/{own[0]}" if own else None
        screen = screen or ("outbox" if channels else "dead-letters" if reactors else None)
        context[ctx.name] = (own + channels + reactors, screen)
    graph = flow_graph(model)
    flow: dict[str, tuple[list[str], str | None]] = {}
    for n in graph.nodes:
        screen = "outbox" if n.id in carried else "dead-letters" if n.id in failing else None
        flow[n.id] = ([n.id], screen)
    for process in processes:
        first = next((n.id for n in graph.nodes if _of_process(n.id, process)), None)
        if first is not None:
            ids = flow[first][0]
            flow[first] = ([*ids, process] if process not in ids else ids, f"processes/{process}")
    here = {c.name for c in model.contexts if held is None or c.name in held}
    return {
        "context": _graph(context_graph(model), context, lambda n: n.id in here),
        "flow": _graph(graph, flow, lambda n: n.group in here),
    }


def _of_process(node: str, process: str) -> bool:
    return node == process or node.startswith(process + ".")


def _graph(
    graph: Graph, shown: dict[str, tuple[list[str], str | None]], here: Callable[[Node], bool]
) -> dict[str, Any]:
    nothing: tuple[list[str], str | None] = ([], None)
    return {
        "groups": [{"id": g.id, "label": g.label} for g in graph.groups],
        "nodes": [
            {
                "id": n.id,
                "label": n.label,
                "shape": n.shape,
                "group": n.group,
                "counts": shown.get(n.id, nothing)[0] if here(n) else [],
                "screen": shown.get(n.id, nothing)[1] if here(n) else None,
                "held": here(n),
            }
            for n in graph.nodes
        ],
        "edges": [
            {"source": e.source, "target": e.target, "label": e.label, "dashed": e.dashed}
            for e in graph.edges
        ],
    }


def console_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
