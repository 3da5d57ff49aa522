"""An OTLP/HTTP traces endpoint that takes every export and keeps nothing: the local collector
bench/tracing.py's exporting server sends its spans to (`POST /v1/traces` -> 200, an empty
`ExportTraceServiceResponse`). It counts the requests and the bytes it took (`GET /count`)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

_taken = {"exports": 0, "bytes": 0}


async def export(request: Request) -> Response:
    body = await request.body()
    _taken["exports"] += 1
    _taken["bytes"] += len(body)
    return Response(b"", media_type="application/x-protobuf")


async def count(request: Request) -> Response:
    return JSONResponse(_taken)


async def ready(request: Request) -> Response:
    return JSONResponse({})


def build_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/v1/traces", export, methods=["POST"]),
            Route("/count", count),
            Route("/openapi.json", ready),  # what bench/_serving.py's Server waits for
        ]
    )
