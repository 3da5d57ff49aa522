"""The console's flow screen (docs/console.md, "Flow of one correlation"):

GET /_loom/flow?correlation=…   -> a form for the id; with one, its path across deployables

The same data as `GET /api/admin/flow/{id}?peers=true` (`http/flow_admin.py`): this deployable's
entries and every peer's (`http/flow_peers.py`), asked with the viewer's token, in time order,
with the peers that did not answer named. The screen also lists the deployables (this one and
its peers) with a link to each one's console: `loom up`'s one console URL reaches them all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response

from loom.runtime.http.console.access import COOKIE, Viewer
from loom.runtime.http.flow_admin import local_flow
from loom.runtime.http.flow_model import FlowOut, deployable
from loom.runtime.http.flow_peers import peer_urls, with_peers

# `routes.console_app`'s `screen`: a page whose values a coroutine of the viewer reads
Screen = Callable[
    [Request, str, Callable[[Viewer], Awaitable[dict[str, Any]]]], Awaitable[Response]
]


def flow_pages(app: FastAPI, screen: Screen, get_service: Callable[[Request], Any]) -> None:
    """Add the flow screen to the console's app."""

    @app.get("/flow", include_in_schema=False)
    async def flow(request: Request, correlation: str = Query("", max_length=200)) -> Response:
        wanted = correlation.strip()

        async def load(viewer: Viewer) -> dict[str, Any]:
            found: FlowOut | None = None
            if wanted:
                found = await local_flow(get_service(request), wanted, viewer.tenant)
                found = await with_peers(found, _authorization(request))
            return {
                "correlation": wanted,
                "flow": found,
                "deployable": deployable(),
                "peers": peer_urls(),
            }

        return await screen(request, "flow.html", load)


def _authorization(request: Request) -> str | None:
    """The viewer's credentials for the peers: the request's own `Authorization`, else the token
    of the console's sign-in cookie (none without a verifier: the peers answer loopback)."""
    given = request.headers.get("authorization")
    if given:
        return given
    cookie = request.cookies.get(COOKIE)
    return f"Bearer {cookie}" if cookie else None
