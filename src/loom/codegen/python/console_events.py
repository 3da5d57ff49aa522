"""The `events` section of `console.json`: what will run when an event is delivered (or a dead
letter of it redriven), read from the model's flow (`loom.model.flow`, as the `flow` diagram).

Per qualified event (`Sales.Placed`), for a service that emits or consumes it: the channel that
carries it, and each consumer in the whole model, in model order: its stable consumer name (the
one a dead letter's error starts with), kind (`reactor`: a workflow's reaction, `process`: a
process manager's, `projection`), context, the deployable that runs it, and what its body runs,
in the order it is reached: operations, factories, service methods and other contexts' handlers,
each with its gates as written (`when …`, `requires …`); an operation that calls its aggregate's
own operations, a service method or another context's handler lists what they run in turn.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from loom.codegen.diagrams.deployables_view import IMPLICIT_ID
from loom.model import ir
from loom.model.deployables import consumer_name, deployable_of
from loom.model.flow import Body, Flow, UnitKey, build
from loom.model.refusals import one_line
from loom.model.telemetry import qualified

_KINDS = {"workflow": "reactor", "process": "process", "projection": "projection"}


def events_section(model: ir.Model, held: Collection[str] | None) -> dict[str, Any]:
    flow = build(model)
    out: dict[str, Any] = {}
    for (context, event), consumers in flow.consumers.items():
        here = held is None or context in held or any(c.context in held for c in consumers)
        if not here:
            continue
        channel = flow.channels.get((context, event))
        out[qualified(context, event)] = {
            "channel": qualified(channel.context, channel.name) if channel is not None else None,
            "consumers": [
                {
                    "name": consumer_name(c.context, c.owner, c.reaction),
                    "kind": _KINDS[c.kind],
                    "context": c.context,
                    "owner": c.owner,
                    "deployable": deployable_of(model, c.context).name or IMPLICIT_ID,
                    "runs": _runs(flow, c.body),
                }
                for c in consumers
            ],
        }
    return dict(sorted(out.items()))


def _runs(flow: Flow, body: Body) -> list[dict[str, Any]]:
    """What `body` runs, itself and through what it calls, each once, in the order reached."""
    found: list[dict[str, Any]] = []
    seen: set[UnitKey] = set()

    def walk(b: Body) -> None:
        for stmt in b.flat:
            for key in flow.callees(b, stmt):
                if key in seen:
                    continue
                seen.add(key)
                found.append(_unit(flow.model, key))
                callee = flow.units.get(key)
                if callee is not None:
                    walk(callee)

    walk(body)
    return found


def _unit(model: ir.Model, key: UnitKey) -> dict[str, Any]:
    """A unit a body runs: its kind, its name (qualified) and its gates' source text."""
    kind, context = key[0], key[1]
    ctx = next(c for c in model.contexts if c.name == context)
    gates: list[str] = []
    if kind == "op":
        name = f"{key[2]}.{key[3]}"
        op = _operation(ctx, key[2], key[3])
        if op is not None and op.requires is not None:
            gates.append(f"requires {one_line(op.requires.text)}")
        if op is not None and op.when is not None:
            gates.append(f"when {one_line(op.when.text)}")
        kind = "operation"
    elif kind == "factory":
        name = f"{key[2]}.create"
        agg = next((a for a in ctx.aggregates if a.name == key[2]), None)
        if agg is not None and agg.factory is not None and agg.factory.requires is not None:
            gates.append(f"requires {one_line(agg.factory.requires.text)}")
    elif kind == "service":
        name = f"{key[2]}.{key[3]}"
    else:  # another context's handler, over its API
        name = key[2]
        handler = next((h for h in ctx.handlers if h.name == key[2]), None)
        if handler is not None and handler.requires is not None:
            gates.append(f"requires {one_line(handler.requires.text)}")
    return {"kind": kind, "name": qualified(context, name), "gates": gates}


def _operation(ctx: ir.Context, aggregate: str, name: str) -> ir.Operation | None:
    agg = next((a for a in ctx.aggregates if a.name == aggregate), None)
    return next((o for o in agg.operations if o.name == name), None) if agg else None
