"""`GET /healthz` and `GET /readyz` (docs/observability.md#health), open to every caller.

`/healthz`: the process answers, so it is alive (200): what a liveness probe restarts on.
`/readyz`: the service can do its work now: the database answers and its tables match the model
(the migrations are current), and each broker this deployable publishes or consumes on is
connected. 200, else 503 `not-ready` naming each reason: what a load balancer or a readiness probe
takes the replica out of rotation on. Each check is bounded by `READY_TIMEOUT`, so a probe never
waits on a database or broker that hangs.

Neither is counted in the request metrics (`http/edge.py`): a probe every few seconds would
drown the model's routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Protocol

from fastapi import FastAPI, Request
from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.responses import Response

from loom.runtime.http.problems import problem
from loom.runtime.messaging.brokers import Brokers
from loom.runtime.messaging.transports.base import TransportError
from loom.runtime.storage.schema_check import differences, read_shape, shape_of
from loom.runtime.values.problem_types import problem_type

HEALTH_PATHS = frozenset({"/healthz", "/readyz"})
READY_TIMEOUT = 2.0  # seconds each check may take
_NOT_READY = problem_type("not-ready")


class HealthHost(Protocol):
    """What readiness asks of the service: its engine, its tables, its brokers."""

    @property
    def engine(self) -> AsyncEngine: ...

    @property
    def brokers(self) -> Brokers: ...

    def schema(self) -> tuple[MetaData, ...]: ...


async def not_ready(host: HealthHost) -> list[str]:
    """Why the service is not ready, one sentence each ([]: ready)."""
    reasons: list[str] = []
    expected = shape_of(host.schema())
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            async with host.engine.connect() as conn:
                actual = await conn.run_sync(read_shape, expected)
    except Exception as exc:  # noqa: BLE001 - any failure to answer is the reason, whatever raised
        reasons.append(f"the database does not answer: {_short(exc)}")
    else:
        diffs = differences(expected, actual)
        if diffs:
            reasons.append(
                "the database does not match the model (apply the migrations: `loom migrate "
                f"apply`): {'; '.join(diffs)}"
            )
    for link in host.brokers.links.values():
        if not link.streams:  # configured, but nothing of this deployable rides it
            continue
        try:
            async with asyncio.timeout(READY_TIMEOUT):
                await link.check()
        except (TransportError, TimeoutError) as exc:
            reasons.append(f"the broker {link.name} is not connected: {_short(exc)}")
    return reasons


def _short(exc: BaseException) -> str:
    """The first line of what went wrong (a driver's error runs on over several)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def add_health_routes(app: FastAPI, host_of: Callable[[Request], HealthHost | None]) -> None:
    """Mount the two routes; `host_of` is the request's service, None before it started."""

    async def healthz() -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    async def readyz(request: Request) -> Response:
        host = host_of(request)
        reasons: Sequence[str] = (
            ["the service has not started"] if host is None else await not_ready(host)
        )
        if not reasons:
            return Response(b'{"status":"ready"}', media_type="application/json")
        status, uri, title = _NOT_READY.parts()
        return problem(
            status,
            uri,
            title,
            "not ready: " + "; ".join(reasons),
            request.url.path,
            reasons=list(reasons),
        )

    for path, endpoint in (("/healthz", healthz), ("/readyz", readyz)):
        app.add_api_route(path, endpoint, methods=["GET"], include_in_schema=False)
