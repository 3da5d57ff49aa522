"""Test kit for Loom services.

`serve(model_files, database_url)` compiles a model, generates its service into a temporary folder,
starts it in-process (lifespan included, so the schema exists) and yields a `ServiceClient`: an
`httpx.AsyncClient` bound to the app over ASGI — no network, no port — that also exposes the app and
the runtime `Service` (its event bus and fault hooks)::

    async with serve(["examples/banking/banking.loom"], "sqlite+aiosqlite:///t.db") as client:
        r = await client.post("/api/workflows/register_customer", json={"name": "Ada"})
        assert r.status_code == 200

A request returns only after every reaction it caused has run, the outbox relay included: the
client awaits `service.settle()` after each response, so a follow-up GET sees the terminal state of
a whole choreography with no sleeps or polling (`serve(..., settle=False)` turns that off).

A model that does not compile raises `ModelError` carrying the rendered diagnostics.

Several services connected by brokers (docs/events.md, "Channels on a broker"):
`await settle_all([orders, inventory])` waits until every one of them is quiet — outboxes
published and delivered, every broker consumer idle — or raises `TimeoutError`.

Processes (docs/processes.md): `given_process(state).when(step).then_state(…)…` tests one step
of a process manager, pure; `VirtualClock(service)` moves time and fires due timeouts and
context-timer ticks deterministically (`await clock.advance(timedelta(minutes=15))`);
`serve(model_files, url, clock=VirtualClock(start=...))` runs the service on it, its background
scheduler off.
`given_process(load_model(files).workflow(name), state).when(event)…` tests one step of a workflow
written in `.loom`, its generated code run without HTTP and with no database to set up.
"""

from __future__ import annotations

from loom.testing._clock import VirtualClock
from loom.testing._model import Call, Model, ModelUsageError, Workflow, load_model
from loom.testing._process import given_process
from loom.testing._service import ModelError, ServiceClient, build_service, serve
from loom.testing._topology import settle_all

__all__ = [
    "Call",
    "Model",
    "ModelError",
    "ModelUsageError",
    "ServiceClient",
    "VirtualClock",
    "Workflow",
    "build_service",
    "given_process",
    "load_model",
    "serve",
    "settle_all",
]
