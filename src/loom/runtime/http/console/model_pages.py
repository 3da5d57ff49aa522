"""The console's Model screen (docs/console.md#model): the context map and the event flow of the
generated package's `console.json`, with the live counts of `GET /api/admin/model` on their nodes.

GET /_loom/model?view=context|flow          -> the drawing, its counts and their table
GET /_loom/model/counts?view=context|flow   -> the counts alone (the page's poll swaps them in)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import Response

from loom.runtime.http.console.access import PREFIX, Viewer
from loom.runtime.http.console.model_drawing import counts_layer, drawing, place, rows
from loom.runtime.http.model_admin import VIEWS, CountsOut, model_counts, read_diagrams
from loom.runtime.values.errors import InvalidValue

POLL_SECONDS = 5  # how often an open Model screen asks for its counts
TITLES = {"context": "Context map", "flow": "Event flow"}

Screen = Callable[[Request, str, Callable[[Viewer], Any]], Any]


def add_model_pages(app: FastAPI, service_app: Any, screen: Screen) -> None:
    """The Model screen's routes on the console's `app`; `screen` renders a template with what
    its loader reads for the viewer (`routes.console_app`)."""

    async def load(view: str, viewer: Viewer, swap: bool) -> dict[str, Any]:
        """The screen's values; `swap`: the poll's (the counts alone, marked to be swapped in)."""
        if view not in VIEWS:
            raise InvalidValue(
                f"view is one of {', '.join(VIEWS)}, not {view!r}", path="query.view"
            )
        diagrams = read_diagrams(getattr(service_app.state, "loom_console_views", None))
        diagram = diagrams.get(view)
        values: dict[str, Any] = {"view": view, "views": TITLES, "poll": POLL_SECONDS}
        if not diagram or not diagram["nodes"]:
            return {**values, "diagram": None}
        service = service_app.state.loom
        counted = await model_counts(service, diagrams, viewer.tenant)
        counts: dict[str, CountsOut] = dict(counted.nodes)
        layout = place(diagram)
        title = f"{TITLES[view]} of the model: {len(diagram['nodes'])} nodes"
        return {
            **values,
            "diagram": diagram,
            "drawing": None if swap else drawing(diagram, layout, PREFIX, title),
            "layer": counts_layer(diagram, layout, counts, swap),
            "rows": rows(diagram, counts, PREFIX),
        }

    @app.get("/model", include_in_schema=False)
    async def model(request: Request, view: str = Query("context")) -> Response:
        result: Response = await screen(
            request, "model.html", lambda viewer: load(view, viewer, False)
        )
        return result

    @app.get("/model/counts", include_in_schema=False)
    async def model_live(request: Request, view: str = Query("context")) -> Response:
        result: Response = await screen(
            request, "model_counts.html", lambda viewer: load(view, viewer, True)
        )
        return result
