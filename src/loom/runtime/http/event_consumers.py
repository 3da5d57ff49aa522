"""What will run when an event is delivered, or a dead letter of it redriven (tag "admin"):

GET /api/admin/events/{event}/consumers   -> {event, channel, consumers: [...]}

From the model, not the database: the generated package's `console.json` ("events", written by
`loom build` from the model's flow): each consumer of the event in the whole model, its kind
(`reactor`, `process`, `projection`), context and deployable, and what its body runs
(operations, factories, service methods, other contexts' handlers) with their gates as written.
The console's redrive dialog shows the same before a redrive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel

from loom.runtime.http.admin_base import admin_routes, problems
from loom.runtime.values.errors import NotFound, StartupRefused


class RunOut(BaseModel):
    kind: Literal["operation", "factory", "service", "handler"]
    name: str  # qualified: `Ledger.Account.book`
    gates: list[str]  # as written: `when placed >= 0`, `requires currentUser.hasRole("x")`


class EventConsumerOut(BaseModel):
    name: str  # the stable consumer name a dead letter's error starts with
    kind: Literal["reactor", "process", "projection"]
    context: str
    owner: str  # the workflow, process or projection
    deployable: str  # the deployable that runs it (`model`: the one implicit deployable)
    runs: list[RunOut]


class EventConsumersOut(BaseModel):
    event: str
    channel: str | None  # the durable channel that carries it; null: delivered in process
    consumers: list[EventConsumerOut]


def read_events(views: Path | None) -> dict[str, Any]:
    """The events of the generated package's `console.json`, by qualified name (a package built
    before they were written holds none: no consumer is known)."""
    if views is None or not views.exists():
        return {}
    try:
        events = json.loads(views.read_text(encoding="utf-8")).get("events", {})
    except (OSError, ValueError, AttributeError) as exc:
        raise StartupRefused(f"the service does not start: cannot read {views}: {exc}") from None
    return events if isinstance(events, dict) else {}


def consumers_of(events: dict[str, Any], event: str) -> EventConsumersOut:
    """What will run for `event` (a qualified event type, as a dead letter names it)."""
    found = events.get(event)
    if found is None:
        raise NotFound(
            "Event",
            event,
            f"no event named {event} is consumed in this service's model; name an event as "
            "its dead letters do, qualified by its context: `Sales.Placed`",
        )
    return EventConsumersOut(event=event, **found)


def event_consumers_router(route_class: Any, views: Path | None) -> APIRouter:
    """The route of what will run per event, from `views` (the package's `console.json`)."""
    router = admin_routes(route_class)
    events = read_events(views)

    @router.get(
        "/api/admin/events/{event}/consumers",
        response_model=EventConsumersOut,
        responses=problems(401, 403, 404, 500, 503),
        operation_id="admin_getEventConsumers",
    )
    async def get_event_consumers(event: str) -> EventConsumersOut:
        """The reactors, processes and projections that consume `event`, in which deployables,
        and the operations each runs with their gates (from the model)."""
        return consumers_of(events, event)

    return router
