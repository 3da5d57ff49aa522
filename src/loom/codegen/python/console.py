"""`console.json`: what the operators' console draws of the model, written beside `main.py`.

A pure function of the model and the contexts the service holds: for each process workflow (by
its `loom.process` name, `Desk.FollowUp`), its state machine as the `states` diagram draws it
(`loom.codegen.diagrams.states_view.process_machine`): nodes with their ids, labels and shapes,
labelled edges. The admin route of an instance answers it with the instance's state marked
(docs/processes.md#instances-for-operators). And per event the service emits or consumes, what
will run when it is delivered (`console_events.py`): the console's redrive dialog shows it, and
`GET /api/admin/events/{event}/consumers` answers it.

Written for a service with processes or channels: the ones with dead letters to redrive.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from loom.codegen.diagrams.states_view import process_machine
from loom.codegen.python.console_events import events_section
from loom.codegen.python.model_info import ModelInfo
from loom.model import ir
from loom.model.telemetry import qualified

CONSOLE_FILE = "console.json"


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
    return {"processes": processes, "events": events_section(model, held)}


def has_console(info: ModelInfo) -> bool:
    """Whether the service gets a `console.json`: it has processes or channels."""
    return bool(info.channels()) or any(w.process for c in info.held() for w in c.workflows)


def console_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
