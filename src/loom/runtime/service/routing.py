"""The route class of generated services (`LoomRoute`), its request (`LoomRequest`), and the
app's `Service` as a route parameter (`ServiceDep`)."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Coroutine
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from sqlalchemy.exc import StatementError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.convertors import FloatConvertor, IntegerConvertor, StringConvertor, UUIDConvertor
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import Scope

from loom.model.telemetry import route_element
from loom.runtime.http.idempotency import HEADER as IDEMPOTENCY_KEY
from loom.runtime.http.idempotency import SAFE_METHODS
from loom.runtime.http.problems import problem_for
from loom.runtime.service.service import Service
from loom.runtime.values.errors import LoomError

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer

_HANDLED = (
    LoomError,
    RequestValidationError,
    StarletteHTTPException,
    StatementError,
    PoolTimeout,
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


# Out of range for every number of a model (an `int` is 64 bits, a `decimal` 50 digits each side).
_HUGE = 10**100


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        # more digits than Python converts (`sys.get_int_max_str_digits`): the number stands for
        # one out of range, so the member's own check refuses it by name, as it would 10**30
        return -_HUGE if text.startswith("-") else _HUGE


# built once: `json.loads(..., parse_float=...)` builds a decoder on every call
_DECODER = json.JSONDecoder(
    parse_float=Decimal, parse_int=_parse_int, parse_constant=_reject_constant
)
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Starlette's path parameter converters whose values take no slash (not `path`, nor any an app
# registers itself, even under one of these names)
_NO_SLASH = (StringConvertor, IntegerConvertor, FloatConvertor, UUIDConvertor)


class LoomRequest(Request):
    """A request whose JSON body keeps every number exact (floats parse as Decimal)."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                text = body.decode(json.detect_encoding(body), "surrogatepass")
                self._json = _DECODER.decode(text)
            except json.JSONDecodeError:
                raise
            # a number whose exponent no Decimal can hold raises InvalidOperation (ArithmeticError)
            except (ValueError, RecursionError, ArithmeticError) as exc:
                doc = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
                raise json.JSONDecodeError(str(exc), doc, 0) from exc
        return self._json


async def refuse_body(request: Request) -> None:
    """The dependency of a writing route that takes no body (an operation with no parameters): no
    body, or `{}`. Any other body is refused as a route with parameters refuses it (422: not
    JSON, not an object, or unknown members), never silently ignored."""
    if not await request.body():
        return
    try:
        data = await request.json()
    except json.JSONDecodeError as exc:
        ctx = {"error": exc.msg}
        error = {"type": "json_invalid", "loc": ("body",), "msg": exc.msg, "ctx": ctx}
        raise RequestValidationError([error]) from None
    if not isinstance(data, dict):
        msg = "Input should be a valid dictionary or object to extract fields from"
        raise RequestValidationError(
            [{"type": "model_attributes_type", "loc": ("body",), "msg": msg}]
        )
    if data:
        msg = "Extra inputs are not permitted"
        raise RequestValidationError(
            [{"type": "extra_forbidden", "loc": ("body", name), "msg": msg} for name in data]
        )


class LoomRoute(APIRoute):
    """Parses JSON bodies with `parse_float=Decimal`, answers every error as problem+json, and
    applies a mutating request with an `Idempotency-Key` at most once (`http/idempotency.py`). A
    writing route with no body parameter refuses a body (`refuse_body`)."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        # the model element it serves, named once (before `super` builds the handler): its
        # span's name and attributes
        tags, op_id = kwargs.get("tags"), kwargs.get("operation_id")
        self.element = route_element(str(tags[0]), op_id) if tags and op_id else None
        endpoint = _served(endpoint)
        super().__init__(path, endpoint, **kwargs)
        writes = {m.upper() for m in kwargs.get("methods") or ()} & _WRITES
        if writes and not self.dependant.body_params:
            given = list(kwargs.get("dependencies") or ())
            # a router re-creates its routes when included: the check is added once
            if not any(d.dependency is refuse_body for d in given):
                # made again with it: FastAPI's analysis of the endpoint, done once for every
                # other route (the few writing routes without a body pay it twice)
                kwargs["dependencies"] = [*given, Depends(refuse_body)]
                super().__init__(path, endpoint, **kwargs)
        # what a matching path starts and ends with, and how many slashes it has (`matches`):
        # Starlette's regex is the literal prefix, then the parameters, none of which takes a
        # slash but `path` (and converters of the app's own), then the literal suffix
        self.literal_prefix = self.path_format.split("{", 1)[0]
        self.literal_suffix = self.path_format.rsplit("}", 1)[1] if "{" in self.path_format else ""
        slash_free = all(type(c) in _NO_SLASH for c in self.param_convertors.values())
        self.slashes = self.path_format.count("/") if slash_free else -1  # -1: any number

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """No match, at once, for a request whose path does not start with the route's literal
        prefix, end with its literal suffix or have its number of segments: the candidate routes
        are tried in turn, each with a regex, parameter conversions and FastAPI's scope lookups
        otherwise (the regex is anchored on both literals and its parameters take no slash, so
        the answer is the same). Under a root path, Starlette's own matching decides."""
        if scope["type"] == "http" and not scope.get("root_path"):
            path: str = scope["path"]
            if (
                not path.startswith(self.literal_prefix)
                or not path.endswith(self.literal_suffix)
                or (self.slashes >= 0 and path.count("/") != self.slashes)
            ):
                return Match.NONE, {}
        return super().matches(scope)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        original = super().get_route_handler()
        element = self.element

        async def respond(request: Request) -> Response:
            try:
                return await original(request)
            except Exception as exc:
                answer = _problem(request, exc)
                if answer is None:
                    raise
                return answer

        async def traced(request: Request, tracer: Tracer) -> Response:
            """The route run inside the span of the model element it serves (`Account.deposit`)."""
            name, attributes = element or (self.name, {})
            with tracer.span(name, attributes=attributes) as span:
                key = request.headers.get(IDEMPOTENCY_KEY)
                if key is not None and request.method not in SAFE_METHODS:
                    return await get_service(request).idempotency.run(request, key, respond)
                try:
                    return await original(request)
                except Exception as exc:
                    answer = _problem(request, exc)
                    if answer is None:
                        raise
                    tracer.refused(span, exc, answer.status_code)
                    return answer

        async def handler(request: Request) -> Response:
            request.__class__ = LoomRequest
            tracer: Tracer | None = getattr(request.app.state, "loom_tracer", None)
            if tracer is not None:
                return await traced(request, tracer)
            key = request.headers.get(IDEMPOTENCY_KEY)
            if key is not None and request.method not in SAFE_METHODS:
                return await get_service(request).idempotency.run(request, key, respond)
            # the fast path, inlined: no extra await per request
            try:
                return await original(request)
            except Exception as exc:
                answer = _problem(request, exc)
                if answer is None:
                    raise
                return answer

        return handler


def _problem(request: Request, exc: Exception) -> Response | None:
    """`exc` answered as a problem; None when the app registered a handler of its own for it
    (the caller raises it again, for that handler)."""
    if isinstance(exc, _HANDLED) or not _has_custom_handler(request, exc):
        return problem_for(request, exc)
    return None


def _has_custom_handler(request: Request, exc: Exception) -> bool:
    handlers = getattr(request.app, "exception_handlers", {})
    for klass in type(exc).__mro__:
        if klass is Exception:
            return False
        if klass in handlers:
            return True
    return False


def get_service(request: Request) -> Service:
    """FastAPI dependency: the app's `Service`."""
    try:
        service: Service = request.app.state.loom
        return service
    except AttributeError:
        raise RuntimeError(
            "the Loom service is not running: start the app's lifespan (create_app sets it up)"
        ) from None


async def _service_of(request: Request) -> Service:
    """`get_service` as a coroutine: FastAPI solves an async dependency on the event loop, where a
    plain function would cost a worker-thread hop on every request."""
    return get_service(request)


# a generated route's `service: ServiceDep` parameter: the app's `Service`
ServiceDep = Annotated[Service, Depends(_service_of)]


# the name under which FastAPI hands `_served` endpoints their request (a `Request` parameter is
# not a dependency: FastAPI passes it as it is)
_REQUEST = "_loom_request"


def _served(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """`endpoint` taking its request where it declares `service: ServiceDep`, and given the
    service from it. FastAPI solves a dependency on every request (a recursive solve with its
    parameter lookups, cache key and call checks), which measured 3 % of the instructions of the
    banking transfer on PostgreSQL (bench/instructions.py); a request parameter it just passes. An endpoint that takes a request already, or the service twice, keeps the
    dependency, as does anything FastAPI cannot read the signature of."""
    if not inspect.iscoroutinefunction(endpoint):
        return endpoint
    try:
        signature = inspect.signature(endpoint, eval_str=True)
    except (NameError, TypeError, ValueError):
        return endpoint
    params = signature.parameters
    served = [name for name, p in params.items() if p.annotation == ServiceDep]
    takes_request = any(
        isinstance(p.annotation, type) and issubclass(p.annotation, HTTPConnection)
        for p in params.values()
    )
    if len(served) != 1 or takes_request or _REQUEST in params:
        return endpoint
    name = served[0]

    @functools.wraps(endpoint)
    async def with_service(_loom_request: Request, **values: Any) -> Any:
        values[name] = get_service(_loom_request)
        return await endpoint(**values)

    with_service.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[
            p.replace(name=_REQUEST, annotation=Request) if p.name == name else p
            for p in params.values()
        ]
    )
    return with_service
