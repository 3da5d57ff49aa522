"""`GET /asyncapi.json`: the AsyncAPI document of the service's durable events, which `loom build`
writes beside the generated main.py; served byte for byte as written (docs/http.md, "Contracts:
AsyncAPI"). Like `/openapi.json` it is public and not in the OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import FastAPI
from starlette.responses import Response

from loom.runtime.values.errors import StartupRefused

ASYNCAPI_PATH = "/asyncapi.json"


def add_asyncapi_route(app: FastAPI, document: Path) -> None:
    """Serve the JSON file `document` at /asyncapi.json; refuse to start when it cannot be read
    or is not JSON (an incomplete build)."""
    try:
        body = document.read_bytes()
        json.loads(body)
    except (OSError, ValueError) as exc:
        raise StartupRefused(
            f"the service does not start: cannot read its AsyncAPI document {document}: {exc}"
        ) from None

    async def asyncapi() -> Response:
        return Response(body, media_type="application/json")

    app.add_api_route(ASYNCAPI_PATH, asyncapi, methods=["GET"], include_in_schema=False)
