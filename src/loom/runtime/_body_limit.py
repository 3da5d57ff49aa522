"""The request body limit: a declared Content-Length over it is answered 413 before the app runs;
a body sent without one (chunked) is cut off with 413 as soon as it grows over the limit. Both
answers are `urn:loom:problem:payload-too-large` problems.

A pure ASGI middleware: it only wraps `receive`, so a request under the limit pays one integer
comparison per body chunk.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._environment import env_number
from ._errors import PayloadTooLarge
from ._problems import problem_for

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
ENV = "LOOM_MAX_BODY_BYTES"


def resolve_max_body_bytes(value: int | None) -> int:
    """`value`, else LOOM_MAX_BODY_BYTES, else 1 MiB; a limit that is not a whole number of
    bytes >= 0 stops the start with a clear error."""
    if value is None:
        value = env_number(ENV, int, "a number of bytes >= 0", lambda n: n >= 0)
        if value is None:
            return DEFAULT_MAX_BODY_BYTES
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_body_bytes must be a number of bytes >= 0, not {value!r}")
    return value


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_body_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await problem_for(Request(scope), PayloadTooLarge(limit))(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise PayloadTooLarge(limit)
            return message

        await self.app(scope, limited, send)
