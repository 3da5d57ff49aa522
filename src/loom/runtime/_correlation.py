"""X-Correlation-Id: accepted on every request, returned on every response (problems included),
and set in context so every event and log line of the request's chain carries it.

A pure ASGI middleware rather than Starlette's BaseHTTPMiddleware: that one runs the endpoint in
another task, where a context variable set here would not be seen.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._ids import new_id
from ._logs import _correlation
from ._problems import problem_for

HEADER = "x-correlation-id"
_HEADER_BYTES = HEADER.encode()
# up to 128 visible ASCII characters; anything else is replaced, never echoed
_VALID = re.compile(rb"[\x21-\x7e]{1,128}")

logger = logging.getLogger("loom.http")


def _incoming(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == _HEADER_BYTES:
            return value.decode("ascii") if _VALID.fullmatch(value) else None
    return None


class CorrelationMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        correlation_id = _incoming(scope) or str(new_id())
        header = (_HEADER_BYTES, correlation_id.encode("ascii"))
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [h for h in message.get("headers", ()) if h[0].lower() != _HEADER_BYTES]
                message = {**message, "headers": [*headers, header]}
            await send(message)

        token = _correlation.set(correlation_id)
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            # Raised past every handler (a route not using LoomRoute, a middleware): answer the
            # problem here, so even this response carries the id and no traceback.
            if started:
                raise
            response: Any = problem_for(Request(scope), exc)
            await response(scope, receive, send_with_id)
        finally:
            _correlation.reset(token)
