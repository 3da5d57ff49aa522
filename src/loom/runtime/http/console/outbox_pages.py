"""The console's outbox (docs/console.md, "Outbox"), on the functions of the outbox admin routes
(`outbox_admin.py`):

GET  /_loom/outbox               -> per durable channel: pending rows, lag, retrying, dead, last error
POST /_loom/outbox/publish-now   -> every pending retry due now, the relays woken

Publish-now acts on every channel at once, as the JSON route does (`outbox_admin.publish_now`:
a relay delivers the due rows of every channel in one pass, so one channel's would not be sooner).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from starlette.responses import Response

from loom.runtime.http.console.access import PREFIX, Viewer
from loom.runtime.http.console.kit import Screens
from loom.runtime.http.outbox_admin import outbox_view, publish_now


def add_outbox_pages(app: FastAPI, screens: Screens) -> None:
    @app.get("/outbox", include_in_schema=False)
    async def outbox(request: Request) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            channels = await outbox_view(screens.service(request), viewer.tenant)
            return {"channels": channels, "pending": sum(c.pending for c in channels)}

        return await screens.screen(request, "outbox.html", load)

    @app.post("/outbox/publish-now", include_in_schema=False)
    async def publish(request: Request) -> Response:
        async def run(viewer: Viewer) -> str:
            done = await publish_now(screens.service(request), request, viewer.tenant)
            return f"{done.made_due} retries made due, {done.pending} pending"

        return await screens.act(request, f"{PREFIX}/outbox", run)
