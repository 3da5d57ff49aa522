"""The one catalogue of the problem types a generated service answers with (RFC 9457 `type`
members, `urn:loom:problem:<slug>`), each with its status and title.

Every error class and every answer the edge writes takes its `type`, status and title from here,
and docs/http.md's table of problems is checked against it (tests/runtime/test_problem_types.py),
as docs/diagnostics.md is against the compiler's codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

PREFIX: Final = "urn:loom:problem:"


@dataclass(frozen=True, slots=True)
class ProblemType:
    slug: str
    status: int
    title: str

    @property
    def uri(self) -> str:
        return PREFIX + self.slug

    def parts(self) -> tuple[int, str, str]:
        """(status, type, title): an error class's three attributes."""
        return self.status, self.uri, self.title


CATALOGUE: Final[dict[str, ProblemType]] = {
    p.slug: p
    for p in [
        ProblemType("malformed-request", 400, "Bad Request"),
        ProblemType("unauthenticated", 401, "Unauthenticated"),
        ProblemType("forbidden", 403, "Forbidden"),
        ProblemType("not-found", 404, "Not Found"),
        ProblemType("no-such-route", 404, "Not Found"),
        ProblemType("method-not-allowed", 405, "Method Not Allowed"),
        ProblemType("request-timeout", 408, "Request Timeout"),
        ProblemType("duplicate-key", 409, "Duplicate key"),
        ProblemType("concurrency-conflict", 409, "Concurrency conflict"),
        ProblemType("api-call-refused", 409, "API call refused"),
        ProblemType("payload-too-large", 413, "Payload too large"),
        ProblemType("uri-too-long", 414, "Request-URI Too Long"),
        ProblemType("precondition-failed", 422, "Precondition failed"),
        ProblemType("invariant-failed", 422, "Invariant failed"),
        ProblemType("state-gate-refused", 422, "State gate refused"),
        ProblemType("arithmetic-refused", 422, "Arithmetic refused"),
        ProblemType("time-refused", 422, "Time arithmetic refused"),
        ProblemType("invalid-request", 422, "Invalid request"),
        ProblemType("idempotency-key-reused", 422, "Idempotency key reused"),
        ProblemType("header-fields-too-large", 431, "Request Header Fields Too Large"),
        ProblemType("internal", 500, "Internal Server Error"),
        ProblemType("bad-gateway", 502, "Bad Gateway"),
        ProblemType("unavailable", 503, "Service Unavailable"),
        ProblemType("database-unavailable", 503, "Service Unavailable"),
        ProblemType("outcome-unknown", 503, "Service Unavailable"),
        ProblemType("not-ready", 503, "Service Unavailable"),
        ProblemType("stored-value-unknown", 503, "Service Unavailable"),
        ProblemType("schema-changed", 503, "Service Unavailable"),
        ProblemType("gateway-timeout", 504, "Gateway Timeout"),
    ]
}


def problem_type(slug: str) -> ProblemType:
    """The catalogue's entry (KeyError for a slug it lacks: a type is declared here first)."""
    return CATALOGUE[slug]


# The router's own refusals (no route matches the path, or none takes the method) and any other
# HTTPException a framework raises carry only a status: this gives them a type of the catalogue.
_BY_STATUS: Final[dict[int, str]] = {
    400: "malformed-request",
    401: "unauthenticated",
    403: "forbidden",
    404: "no-such-route",
    405: "method-not-allowed",
    408: "request-timeout",
    413: "payload-too-large",
    414: "uri-too-long",
    422: "invalid-request",
    431: "header-fields-too-large",
    503: "unavailable",
}


def for_http_status(status: int) -> ProblemType:
    """The type of a bare HTTP refusal: the status's entry, else `malformed-request` for a client
    error and `internal` for a server one (the answer keeps its own status either way)."""
    slug = _BY_STATUS.get(status, "malformed-request" if status < 500 else "internal")
    return CATALOGUE[slug]
