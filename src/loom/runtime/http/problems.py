"""RFC 9457 problem+json responses for every error a request can end in."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy.exc import StatementError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from loom.runtime.storage.dberrors import classify
from loom.runtime.values.errors import (
    ConcurrencyConflict,
    DatabaseUnavailable,
    InvalidValue,
    LoomError,
    Overloaded,
    PayloadTooLarge,
    SchemaChanged,
)
from loom.runtime.values.logs import current_correlation_id
from loom.runtime.values.problem_types import for_http_status, problem_type

logger = logging.getLogger("loom.http")

PROBLEM_MEDIA_TYPE = "application/problem+json"
INVALID_REQUEST = problem_type("invalid-request").uri
INTERNAL = problem_type("internal").uri

_PROBLEM_REF = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {
        "description": "Unauthenticated: the bearer token does not verify "
        "(urn:loom:problem:unauthenticated)",
        "content": _PROBLEM_REF,
    },
    403: {
        "description": "Forbidden: a `requires` gate refused the caller (urn:loom:problem:forbidden)",
        "content": _PROBLEM_REF,
    },
    404: {"description": "Not Found (urn:loom:problem:not-found)", "content": _PROBLEM_REF},
    409: {
        "description": "Concurrency conflict (urn:loom:problem:concurrency-conflict)",
        "content": _PROBLEM_REF,
    },
    422: {
        "description": "Invalid request, or a precondition / invariant / state gate refused",
        "content": _PROBLEM_REF,
    },
    413: {
        "description": "Payload too large: the request body is over the limit "
        "(urn:loom:problem:payload-too-large)",
        "content": _PROBLEM_REF,
    },
    500: {"description": "Internal error (urn:loom:problem:internal)", "content": _PROBLEM_REF},
    503: {
        "description": "Unavailable, retry after Retry-After: overloaded "
        "(urn:loom:problem:unavailable), the database is down "
        "(urn:loom:problem:database-unavailable), or the commit's outcome is unknown "
        "(urn:loom:problem:outcome-unknown)",
        "content": _PROBLEM_REF,
    },
}
# a route whose workflow or handler calls another context's handler (`resource { kind: api }`)
_API_CALL_ONLY: dict[int | str, dict[str, Any]] = {
    502: {
        "description": "Bad Gateway: a context this route calls failed or could not be reached "
        "(urn:loom:problem:bad-gateway; `upstream` names the context)",
        "content": _PROBLEM_REF,
    },
    504: {
        "description": "Gateway Timeout: a context this route calls did not answer in time "
        "(urn:loom:problem:gateway-timeout; `upstream` names the context)",
        "content": _PROBLEM_REF,
    },
}
API_CALL_RESPONSES: dict[int | str, dict[str, Any]] = {**PROBLEM_RESPONSES, **_API_CALL_ONLY}
# a GET route writes nothing (no concurrency conflict) and reads no body (never too large)
READ_PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    k: v for k, v in PROBLEM_RESPONSES.items() if k not in (409, 413)
}
API_CALL_READ_RESPONSES: dict[int | str, dict[str, Any]] = {
    **READ_PROBLEM_RESPONSES,
    **_API_CALL_ONLY,
}


def problem(
    status: int,
    type: str,
    title: str,
    detail: str,
    instance: str,
    headers: Mapping[str, str] | None = None,
    **extensions: Any,
) -> Response:
    return Response(
        problem_json(status, type, title, detail, instance, **extensions),
        status_code=status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=headers,
    )


def problem_json(
    status: int, type: str, title: str, detail: str, instance: str | None, **extensions: Any
) -> bytes:
    """The problem's body; without `instance` when there is none (a request refused before its
    URL could be trusted)."""
    body: dict[str, Any] = {"type": type, "title": title, "status": status, "detail": detail}
    if instance is not None:
        body["instance"] = instance
    body.update(extensions)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str).encode()


def _path(loc: Any) -> str:
    return ".".join(str(part) for part in loc) if isinstance(loc, (tuple, list)) else str(loc)


def validation_errors(errors: Any) -> list[dict[str, str]]:
    out = []
    for err in errors:
        kind = err.get("type")
        if kind == "json_invalid":
            ctx = err.get("ctx") or {}
            out.append(
                {"path": "body", "message": f"Invalid JSON: {ctx.get('error', 'cannot parse')}"}
            )
            continue
        out.append({"path": _path(err.get("loc", ())), "message": str(err.get("msg", kind))})
    return out


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _http_detail(request: Request, exc: StarletteHTTPException) -> str:
    """The router's refusals say what was asked; any other keeps the raiser's detail."""
    if exc.status_code == 404 and exc.detail == _phrase(404):
        return f"no route {request.method} {request.url.path}"
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        return f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    return exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail, default=str)


def _log_internal(request: Request, exc: BaseException) -> None:
    logger.error(
        json.dumps(
            {
                "level": "error",
                "event": "unhandled_exception",
                "method": request.method,
                "path": request.url.path,
                "correlation_id": current_correlation_id(),
                "error": f"{type(exc).__name__}: {exc}",
                "traceback": "".join(traceback.format_exception(exc)),
            },
            default=str,
        )
    )


def _log_unavailable(request: Request, exc: BaseException) -> None:
    logger.warning(
        json.dumps(
            {
                "level": "warning",
                "event": "database_unavailable",
                "method": request.method,
                "path": request.url.path,
                "correlation_id": current_correlation_id(),
                "error": f"{type(exc).__name__}: {exc}",
            },
            default=str,
        )
    )


def internal_problem(request: Request, exc: BaseException) -> Response:
    _log_internal(request, exc)
    return problem(
        500,
        INTERNAL,
        "Internal Server Error",
        "The server could not complete the request.",
        request.url.path,
    )


def problem_for(request: Request, exc: BaseException) -> Response:
    """The problem response for any exception."""
    instance = request.url.path
    if isinstance(exc, LoomError):
        return problem(
            exc.status,
            exc.type,
            exc.title,
            exc.detail,
            instance,
            headers=exc.headers(),
            **exc.extensions(),
            **_saved_member(exc),
        )
    if isinstance(exc, RequestValidationError):
        errors = validation_errors(exc.errors())
        detail = "; ".join(f"{e['path']}: {e['message']}" for e in errors) or "invalid request"
        return problem(422, INVALID_REQUEST, "Invalid request", detail, instance, errors=errors)
    if isinstance(exc, PayloadTooLarge):
        return problem(413, exc.type, exc.title, exc.detail, instance, max_bytes=exc.limit)
    if isinstance(exc, StarletteHTTPException):
        if exc.status_code < 200 or exc.status_code in (204, 304):
            return Response(status_code=exc.status_code, headers=exc.headers)
        typ = for_http_status(exc.status_code)
        detail = _http_detail(request, exc)
        title = typ.title if typ.status == exc.status_code else _phrase(exc.status_code)
        return problem(exc.status_code, typ.uri, title, detail, instance, headers=exc.headers)
    if isinstance(exc, PoolTimeout):  # every connection busy for pool_timeout: overload
        return problem_for(request, Overloaded())
    kind = classify(exc)
    if kind == "unavailable":
        _log_unavailable(request, exc)
        return problem_for(request, DatabaseUnavailable())
    if kind == "schema":
        return problem_for(request, SchemaChanged())
    if isinstance(exc, StatementError):
        if kind in ("conflict", "duplicate"):
            c = ConcurrencyConflict(
                "unit of work",
                None,
                "the data was changed concurrently; reload it and try again",
            )
            return problem(c.status, c.type, c.title, c.detail, instance, aggregate=c.aggregate)
        if kind == "data":
            return problem_for(request, InvalidValue())
    return internal_problem(request, exc)


def _saved_member(exc: LoomError) -> dict[str, Any]:
    if not exc.saved:
        return {}
    saved = [
        {"aggregate": what, "id": id if isinstance(id, int | str) else str(id)}
        for what, id in exc.saved
    ]
    return {"saved": saved}


async def _handler(request: Request, exc: Exception) -> Response:
    return problem_for(request, exc)


def install_problem_handlers(app: FastAPI) -> None:
    for kind in (
        LoomError,
        RequestValidationError,
        StarletteHTTPException,
        StatementError,
        Exception,
    ):
        app.add_exception_handler(kind, _handler)
