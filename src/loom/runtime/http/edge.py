"""The request edge: one pure ASGI middleware for what every request passes through before a route.

- `X-Correlation-Id`: accepted on every request (up to 128 visible ASCII characters, anything else
  replaced, never echoed), else a new UUIDv7; returned on every response, problems included, and
  set in context so every event and log line of the request's chain carries it.
- The body limit (`http/body_limit.py`): a declared Content-Length over it is answered 413 before the
  app runs; a body sent without one (chunked) is cut off with 413 as soon as it grows over it.
- A 204 answer carries no `Content-Type` (nor `Content-Length`): it has no body.
- Authentication (`http/auth.py`): the request's principal, or a 401 before the route runs; the
  `Authorization` header itself is kept in context for the API calls that forward it. A
  `Loom-System-Token` (`http/system_tokens.py`: a call another context made as the system) is
  the system principal of its tenant, or a 401 when it does not verify.
- `HEAD`: answered as the `GET` of the same URL would be, headers and status alike, without the
  body (FastAPI routes a GET route's HEAD to a 405 otherwise).

One layer rather than three: every await of a request (each database round trip suspends and
resumes the whole chain of coroutines above it) pays for each middleware frame, and the three read
the same headers. Pure ASGI rather than Starlette's BaseHTTPMiddleware, which runs the endpoint in
another task, where the context variables set here would not be seen.
"""

from __future__ import annotations

import re
import sys
from time import perf_counter
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from loom.model.telemetry import CORRELATION_ID, TENANT
from loom.runtime.http.auth import Authenticator, bearer_token
from loom.runtime.http.health import HEALTH_PATHS
from loom.runtime.http.problems import problem_for
from loom.runtime.http.system_tokens import HEADER_KEY as _SYSTEM_TOKEN
from loom.runtime.http.system_tokens import SystemTokens
from loom.runtime.values.errors import PayloadTooLarge, StartupRefused, Unauthenticated
from loom.runtime.values.ids import new_id_text
from loom.runtime.values.logs import _correlation
from loom.runtime.values.metrics import Metrics
from loom.runtime.values.principal import ANONYMOUS, Principal, _authorization, _current
from loom.runtime.values.trace_context import TRACEPARENT, TRACESTATE

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from loom.runtime.values.traces import Tracer

CORRELATION_HEADER = "x-correlation-id"
_TRACEPARENT, _TRACESTATE = TRACEPARENT.encode(), TRACESTATE.encode()
_CORRELATION = CORRELATION_HEADER.encode()
_CONTENT_LENGTH = b"content-length"
_AUTHORIZATION = b"authorization"
_VALID_ID = re.compile(rb"[\x21-\x7e]{1,128}")
_REPLACED = frozenset({_CORRELATION})
_NO_CONTENT = frozenset({_CORRELATION, b"content-type", _CONTENT_LENGTH})


class EdgeMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        authenticator: Authenticator | None,
        system_tokens: SystemTokens | None = None,
        metrics: Metrics | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.authenticator = authenticator
        self.system_tokens = system_tokens
        self.metrics = metrics  # None: not counted (`--no-metrics`)
        self.tracer = tracer  # None: not traced

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, _plain_startup_refusal(send))
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # by name, the last of a repeated one: built in C, where a loop comparing each header with
        # the four names read here was 123 of this method's 333 bytecodes (seven headers)
        headers = dict(scope["headers"])
        correlation: bytes | None = headers.get(_CORRELATION)
        length: bytes | None = headers.get(_CONTENT_LENGTH)
        authorization: bytes | None = headers.get(_AUTHORIZATION)
        system_token: bytes | None = headers.get(_SYSTEM_TOKEN)
        if correlation is not None and _VALID_ID.fullmatch(correlation):
            correlation_id = correlation.decode("ascii")
        else:
            correlation_id = new_id_text()
            correlation = correlation_id.encode("ascii")
        header = (_CORRELATION, correlation)
        started = False
        status = 500
        metrics = self.metrics
        began = perf_counter() if metrics is not None else 0.0
        method = scope["method"]
        head = method == "HEAD"
        if head:
            # a copy: the server reads its own scope's method to know the answer has no body
            scope = {**scope, "method": "GET"}

        async def send_with_id(message: Message) -> None:
            nonlocal started, status
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                # a 204 has no body, so no content type (FastAPI gives its JSON one to every route)
                drop = _NO_CONTENT if message["status"] == 204 else _REPLACED
                headers = [h for h in message.get("headers", ()) if h[0].lower() not in drop]
                message = {**message, "headers": [*headers, header]}
            elif head and message["type"] == "http.response.body":
                # the GET's Content-Length stays: it is what a GET would carry (RFC 9110 §9.3.2)
                message = {**message, "body": b""}
            await send(message)

        server: tuple[Span, object] | None = None
        if self.tracer is not None and scope["path"] not in HEALTH_PATHS:
            server = _server_span(self.tracer, scope, method, correlation_id)
        correlation_token = _correlation.set(correlation_id)
        header_token = _authorization.set(
            authorization.decode("latin-1") if authorization is not None else None
        )
        principal_token = None
        try:
            limit = self.max_body_bytes
            declared = _whole_number(length)
            if declared is not None and declared > limit:
                raise PayloadTooLarge(limit)
            if declared is None:
                # No (valid) Content-Length: count the body as it arrives. With one, the server
                # already refuses a body longer than it declares.
                receive = _limited(receive, limit)
            if system_token is not None:
                principal_token = _current.set(self._system(system_token))
            elif self.authenticator is not None and authorization is not None:
                principal = self.authenticator.authenticate(
                    bearer_token(authorization.decode("latin-1"))
                )
                principal_token = _current.set(principal)
            else:
                principal_token = _current.set(ANONYMOUS)
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            # A 413 or 401 refused here, or an error raised past every handler (a route not
            # using LoomRoute, a middleware): answer the problem here, so even this response
            # carries the id and no traceback.
            if started:
                raise
            response: Any = problem_for(Request(scope), exc)
            await response(scope, receive, send_with_id)
        finally:
            if server is not None and self.tracer is not None:
                _end_server_span(self.tracer, server, scope, method, status)
            if metrics is not None and scope["path"] not in HEALTH_PATHS:
                # the route's template (a bounded label), never the path itself
                route = getattr(scope.get("route"), "path", "unmatched")
                metrics.request(route, method, status, perf_counter() - began)
            if principal_token is not None:
                _current.reset(principal_token)
            _authorization.reset(header_token)
            _correlation.reset(correlation_token)

    def _system(self, token: bytes) -> Principal:
        if self.system_tokens is None:
            raise Unauthenticated("this service takes no system token", error="invalid_request")
        return self.system_tokens.verify(token.decode("latin-1").strip())


def _server_span(
    tracer: Tracer, scope: Scope, method: str, correlation_id: str
) -> tuple[Span, object]:
    """The request's SERVER span, current until `_end_server_span`: a child of the caller's
    `traceparent` when it sent one, else the root of a new trace. Named `METHOD` until the route
    is known (OpenTelemetry's HTTP conventions: `METHOD /route/{template}`)."""
    carrier = {}
    for name, value in scope["headers"]:
        if name in (_TRACEPARENT, _TRACESTATE):
            carrier[name.decode("latin-1")] = value.decode("latin-1")
    client = scope.get("client")
    attributes: dict[str, Any] = {
        "http.request.method": method,
        "url.path": scope["path"],
        "url.scheme": scope.get("scheme", "http"),
        CORRELATION_ID: correlation_id,
    }
    if client:
        attributes["client.address"] = client[0]
    span = tracer.start(
        method, tracer.SERVER, attributes, parent=tracer.extract(carrier) if carrier else None
    )
    return span, tracer.enter(span)


def _end_server_span(
    tracer: Tracer, server: tuple[Span, object], scope: Scope, method: str, status: int
) -> None:
    span, token = server
    route = getattr(scope.get("route"), "path", None)
    if route is not None:
        span.update_name(f"{method} {route}")
        span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)
    tenant = _current.get().tenant
    if tenant is not None:
        span.set_attribute(TENANT, tenant)
    tracer.answered(span, status)
    span.end()
    tracer.leave(token)


def _whole_number(value: bytes | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def _limited(receive: Receive, limit: int) -> Receive:
    received = 0

    async def limited() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise PayloadTooLarge(limit)
        return message

    return limited


def _plain_startup_refusal(send: Send) -> Send:
    """Starlette reports a failed start-up to the server with the formatted traceback, which
    uvicorn prints; for a `StartupRefused` (a database that does not match the model, or does
    not answer) the message alone says everything, so it replaces the traceback. `send` is
    awaited inside Starlette's `except` block, so the exception is the one being handled."""

    async def send_plain(message: Message) -> None:
        if message["type"] == "lifespan.startup.failed":
            exc = sys.exc_info()[1]
            if isinstance(exc, StartupRefused):
                message = {**message, "message": str(exc)}
        await send(message)

    return send_plain
