"""The console's timers (docs/console.md, "Timers"), on the functions of the timer admin routes
(`timer_admin.py`, `timer_changes.py`):

GET  /_loom/timers                        -> the armed timeouts, then the context timers, with
                                             their status in words (armed, due, overdue, leased)
POST /_loom/timers/{id}/fire              -> fire one now
GET, POST /_loom/timers/{id}/reschedule   -> a form (a time, or a delay from now); move it
GET, POST /_loom/timers/{id}/cancel       -> a confirmation page; disarm the timeout

The confirmation and the form are pages of their own, reached by links: they work without
JavaScript. Every action is audited as the console's (`kit.Screens.act`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi import FastAPI, Query, Request
from starlette.responses import Response

from loom.runtime.http.audit import audited
from loom.runtime.http.console.access import PREFIX, Viewer
from loom.runtime.http.console.kit import PAGE, Screens, console_page, form, paged, writable
from loom.runtime.http.timer_admin import fire, pending_timer, timers_page
from loom.runtime.http.timer_changes import cancel, reschedule
from loom.runtime.values import clock
from loom.runtime.values.errors import InvalidValue

TIMERS = f"{PREFIX}/timers"
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def add_timer_pages(app: FastAPI, screens: Screens) -> None:
    @app.get("/timers", include_in_schema=False)
    async def timers(request: Request, offset: int = Query(0, ge=0)) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            service = screens.service(request)
            items, total = await timers_page(service, PAGE, offset, viewer.tenant)
            return paged(request, items, total, offset)

        return await screens.screen(request, "timers.html", load)

    @app.post("/timers/{id}/fire", include_in_schema=False)
    async def fire_timer(request: Request, id: str) -> Response:
        async def run(viewer: Viewer) -> str:
            service = screens.service(request)
            fired = await fire(service, id, viewer.tenant)
            await audited(service, request, "fire", [id], {"kind": fired.kind}, fired.outcome)
            return f"{fired.kind} {fired.outcome}"

        return await screens.act(request, TIMERS, run)

    async def change_page(request: Request, id: str, change: str) -> Response:
        """The page of a change: the reschedule form, or the cancel confirmation."""

        async def load(viewer: Viewer) -> dict[str, Any]:
            writable(viewer)
            timer = await pending_timer(screens.service(request), id, viewer.tenant)
            if change == "cancel" and timer.kind == "timer":
                raise InvalidValue(
                    f"{id} is a context timer: it ticks by the model's schedule and cannot be "
                    "cancelled; reschedule its next tick instead",
                    path="path.id",
                )
            # where it came from (the timers, or an instance's page), where it goes back to
            to = console_page(request.query_params.get("back"), TIMERS)
            return {"timer": timer, "id": id, "change": change, "now": clock.now(), "to": to}

        return await screens.screen(request, "timer_change.html", load)

    @app.get("/timers/{id}/reschedule", include_in_schema=False)
    async def reschedule_page(request: Request, id: str) -> Response:
        return await change_page(request, id, "reschedule")

    @app.get("/timers/{id}/cancel", include_in_schema=False)
    async def cancel_page(request: Request, id: str) -> Response:
        return await change_page(request, id, "cancel")

    @app.post("/timers/{id}/reschedule", include_in_schema=False)
    async def reschedule_timer(request: Request, id: str) -> Response:
        async def run(viewer: Viewer) -> str:
            fields = await form(request)
            due = due_at(fields.get("due_at", ""), fields.get("delay", ""))
            moved = await reschedule(screens.service(request), request, id, due, viewer.tenant)
            return f"{moved.kind} rescheduled to {moved.due_at:%Y-%m-%d %H:%M:%S} UTC"

        return await screens.act(request, TIMERS, run)

    @app.post("/timers/{id}/cancel", include_in_schema=False)
    async def cancel_timer(request: Request, id: str) -> Response:
        async def run(viewer: Viewer) -> str:
            await cancel(screens.service(request), request, id, viewer.tenant)
            return "timeout cancelled"

        return await screens.act(request, TIMERS, run)


def due_at(at: str, delay: str) -> datetime:
    """The time a reschedule form asks for: a delay from now (`90s`, `15m`, `2h`, `1d`), else a
    time in UTC (the form's `datetime-local`, `2030-05-01T14:00`, or ISO 8601 with an offset)."""
    if delay.strip():
        found = _DELAY.match(delay)
        if found is None:
            raise InvalidValue(
                f"{delay!r} is no delay: write a number and a unit, s, m, h or d (`15m`, `2h`)",
                path="body.delay",
            )
        amount, unit = float(found.group(1)), _UNITS[found.group(2)]
        if amount > 3650 * 86400:
            raise InvalidValue(f"{delay!r} is too far ahead", path="body.delay")
        return clock.now() + timedelta(**{unit: amount})
    if not at.strip():
        raise InvalidValue("give the new due time, or a delay from now", path="body.due_at")
    try:
        when = datetime.fromisoformat(at.strip())
    except ValueError:
        raise InvalidValue(
            f"{at!r} is no time: write it as 2030-05-01T14:00 (UTC)", path="body.due_at"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
