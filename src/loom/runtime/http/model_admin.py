# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""The live counts on the model's diagrams (tag "admin"), what the console's Model screen draws:

GET /api/admin/model   -> {elements: {id: {kind, running, pending, dead}}, nodes: {id: {...}}}

`elements`: each process (`loom.process`: its running instances; its dead timeouts), durable
channel (its pending outbox rows and dead events), event (`loom.event`: its pending and dead
rows), reactor (`loom.reactor`: the dead events it failed on) and timeout (`Process.name`: its
dead letters) that has any; read with the admin functions of the other screens
(`process_list`, `outbox_view`, `groups`), so a tenant's administrator counts its tenant's rows
only. `nodes`: each node of the generated package's context map and event flow (`console.json`'s
`model`, ids as `loom diagram` gives them): the running and pending of the elements it shows,
summed, and its dead letters counted once each. A dead letter touches several elements (its
channel, its event, the reactor that failed; a timeout's process and the timeout): a node showing
two of them, a context with the channel and the reactor that reads it, counts it once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from fastapi import APIRouter, Depends
from pydantic import BaseModel
from sqlalchemy import func, select

from loom.runtime.http.admin import AdminHost, of_tenant
from loom.runtime.http.admin_base import admin_routes, admin_tenant, problems
from loom.runtime.http.dead_letter_admin import groups
from loom.runtime.http.outbox_admin import OutboxAdminHost, outbox_view
from loom.runtime.http.process_admin import ProcessAdminHost, process_list
from loom.runtime.messaging.outbox import PENDING, outbox
from loom.runtime.values.errors import StartupRefused

Kind = Literal["process", "channel", "event", "reactor", "timeout"]
VIEWS = ("context", "flow")  # the diagrams of `console.json`'s `model`, by name


class ModelAdminHost(OutboxAdminHost, ProcessAdminHost, AdminHost, Protocol):
    """What the counts need: the outbox, the dead letters and the process instances."""


class CountsOut(BaseModel):
    running: int = 0  # process instances running
    pending: int = 0  # outbox rows not yet delivered
    dead: int = 0  # dead letters (events, timeouts), until redriven or archived


class ElementCountsOut(CountsOut):
    kind: Kind


class ModelCountsOut(BaseModel):
    elements: dict[str, ElementCountsOut]
    nodes: dict[str, CountsOut]


# a group of dead letters: the ids of the elements they touch, and how many they are
Touched = tuple[frozenset[str], int]


async def element_counts(
    service: ModelAdminHost, tenant: str | None
) -> tuple[dict[str, ElementCountsOut], list[Touched]]:
    """The counts of every element that has any (of `tenant`), by its id; and the dead letters'
    groups, by the elements each touches."""
    out: dict[str, ElementCountsOut] = {}
    touched: list[Touched] = []

    def of(id: str, kind: Kind) -> ElementCountsOut:
        return out.setdefault(id, ElementCountsOut(kind=kind))

    if service.uses_processes:
        for process in await process_list(service, tenant):
            counted = of(process.process, "process")
            counted.running, counted.dead = process.running, process.timeouts_dead
    for channel in await outbox_view(service, tenant):
        counted = of(channel.channel, "channel")
        counted.pending, counted.dead = channel.pending, channel.dead
    if service.channels:
        o = outbox.c
        pending = (
            select(o.event_type, func.count())
            .where(o.status == PENDING, *of_tenant(o.tenant, tenant))
            .group_by(o.event_type)
        )
        async with service.engine.connect() as conn:
            for event, n in (await conn.execute(pending)).all():
                of(event, "event").pending = int(n)
    for group in await groups(service, False, tenant):
        key = group.group
        ids = set()
        if key.kind == "event":
            of(key.event_type, "event").dead += group.count
            ids |= {key.event_type, *([key.channel] if key.channel else [])}
            if key.consumer:
                of(key.consumer, "reactor").dead += group.count
                ids.add(key.consumer)
        elif key.consumer:
            timeout = f"{key.consumer}.{key.event_type}"
            of(timeout, "timeout").dead += group.count
            ids |= {timeout, key.consumer}  # and the process's own dead count
        touched.append((frozenset(ids), group.count))
    return {id: out[id] for id in sorted(out)}, touched


def node_counts(
    diagrams: Mapping[str, Any], elements: Mapping[str, CountsOut], touched: Sequence[Touched]
) -> dict[str, CountsOut]:
    """Each node of the diagrams: the running and pending of the elements it shows, summed, and
    the dead letters that touch any of them, each once."""
    out: dict[str, CountsOut] = {}
    for view in VIEWS:
        for node in diagrams.get(view, {}).get("nodes", []):
            ids = set(node["counts"])
            shown = [elements[id] for id in ids if id in elements]
            out[node["id"]] = CountsOut(
                running=sum(c.running for c in shown),
                pending=sum(c.pending for c in shown),
                dead=sum(n for group, n in touched if group & ids),
            )
    return out


@functools.cache
def read_diagrams(views: Path | None) -> dict[str, Any]:
    """The context map and event flow of the generated package's `console.json` (empty without
    one); a file that cannot be read refuses the start (a broken build)."""
    if views is None:
        return {}
    try:
        diagrams = json.loads(views.read_text(encoding="utf-8")).get("model", {})
    except (OSError, ValueError, AttributeError) as exc:
        raise StartupRefused(f"the service does not start: cannot read {views}: {exc}") from None
    if not isinstance(diagrams, dict):
        raise StartupRefused(f"the service does not start: {views} holds no model diagrams")
    return diagrams


async def model_counts(
    service: ModelAdminHost, diagrams: Mapping[str, Any], tenant: str | None
) -> ModelCountsOut:
    elements, touched = await element_counts(service, tenant)
    return ModelCountsOut(elements=elements, nodes=node_counts(diagrams, elements, touched))


def model_router(
    route_class: Any, get_service: Callable[..., ModelAdminHost], console_views: Path | None
) -> APIRouter:
    """The counts route; `console_views` the generated package's `console.json`."""
    router = admin_routes(route_class)
    diagrams = read_diagrams(console_views)

    @router.get(
        "/api/admin/model",
        response_model=ModelCountsOut,
        responses=problems(401, 403, 500, 503),
        operation_id="admin_getModelCounts",
    )
    async def get_model_counts(
        service: ModelAdminHost = Depends(get_service),
    ) -> ModelCountsOut:
        """The running instances, pending rows and dead letters of each element of the model,
        and of each node of its context map and event flow."""
        return await model_counts(service, diagrams, admin_tenant())

    return router
