"""The operator's side of a service: the admin routes under `/api/admin/` and the web console at
`/_loom/` (docs/console.md), mounted on the app `create_app` makes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.routing import APIRoute

from loom.runtime.http.console import mount_console
from loom.runtime.values.environment import env_flag


def mount_admin(
    app: FastAPI,
    route_class: type[APIRoute],
    get_service: Callable[[Request], Any],
    *,
    dead_letter_routes: bool,
    processes: bool,
    console_views: Path | None,
) -> None:
    """The admin routes a service has (dead letters, outbox, audit and the model's counts when
    `dead_letter_routes`: it has channels or processes; timers and process instances when it has
    `processes`) and the console, unless LOOM_NO_CONSOLE is set."""
    # each admin module loads only for a service that has its routes: a model without channels
    # or processes starts without loading them
    if dead_letter_routes:
        from loom.runtime.http.admin import admin_router
        from loom.runtime.http.audit import audit_router
        from loom.runtime.http.dead_letter_admin import dead_letter_router
        from loom.runtime.http.event_consumers import event_consumers_router
        from loom.runtime.http.flow_admin import flow_router
        from loom.runtime.http.model_admin import model_router
        from loom.runtime.http.outbox_admin import outbox_router

        app.include_router(admin_router(route_class, get_service))
        app.include_router(dead_letter_router(route_class, get_service))
        app.include_router(outbox_router(route_class, get_service))
        app.include_router(audit_router(route_class, get_service))
        app.include_router(event_consumers_router(route_class, console_views))
        app.include_router(model_router(route_class, get_service, console_views))
        app.include_router(flow_router(route_class, get_service))
    if processes:
        from loom.runtime.http.process_admin import processes_router
        from loom.runtime.http.timer_admin import timers_router

        app.include_router(timers_router(route_class, get_service))
        app.include_router(processes_router(route_class, get_service, console_views))
    app.state.loom_console_views = console_views  # the console draws the machines and the model
    if not env_flag("LOOM_NO_CONSOLE"):
        mount_console(app)
