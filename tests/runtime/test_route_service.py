"""A route's `service: ServiceDep` is handed over by `LoomRoute` from the request, without a
dependency for FastAPI to solve on every request; a route it cannot do that for keeps the
dependency. Both answer the same, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Request
from sqlalchemy import MetaData

from loom.runtime import LoomRoute, Service, ServiceDep, create_app

router = APIRouter(route_class=LoomRoute)


@router.get("/api/served/{n}", operation_id="served")
async def served(n: int, service: ServiceDep) -> dict[str, Any]:
    """A generated route's shape (this module's annotations are strings: they are read too)."""
    return {"n": n, "service": type(service).__name__, "dialect": service.dialect}


@router.get("/api/both", operation_id="both")
async def both(request: Request, service: ServiceDep) -> dict[str, Any]:
    """Takes the request itself: FastAPI passes one request parameter, so the dependency stays."""
    return {"same": service is request.app.state.loom}


@router.post("/api/body", operation_id="body")
async def body(payload: dict[str, int], service: ServiceDep) -> int:
    return payload["a"] + len(service.dialect)


def _route(app: FastAPI, path: str) -> Any:
    return next(r for r in app.routes if getattr(r, "path", None) == path)


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[FastAPI]:
    app = create_app(
        title="route-service", metadata=MetaData(), routers=[router], database_url=database_url
    )
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as c:
        yield c


async def test_the_service_is_handed_over_without_a_dependency(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    route = _route(app, "/api/served/{n}")
    assert route.dependant.dependencies == []
    assert route.dependant.request_param_name == "_loom_request"
    r = await client.get("/api/served/7")
    assert r.status_code == 200, r.text
    assert r.json() == {"n": 7, "service": "Service", "dialect": app.state.loom.dialect}
    assert isinstance(app.state.loom, Service)
    # what users read of the route is the endpoint's own
    assert route.name == "served" and route.description.startswith("A generated route's shape")
    # a bad parameter is still refused as before (422), the request never reaching the body
    assert (await client.get("/api/served/x")).status_code == 422


async def test_a_route_taking_its_request_keeps_the_dependency(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    route = _route(app, "/api/both")
    assert [d.name for d in route.dependant.dependencies] == ["service"]
    r = await client.get("/api/both")
    assert r.status_code == 200, r.text
    assert r.json() == {"same": True}


async def test_body_routes_and_the_openapi_document_are_unchanged(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    r = await client.post("/api/body", json={"a": 1})
    assert r.status_code == 200, r.text
    assert r.json() == 1 + len(app.state.loom.dialect)
    assert (await client.post("/api/body", json={"a": "x"})).status_code == 422
    doc = (await client.get("/openapi.json")).json()
    served_op = doc["paths"]["/api/served/{n}"]["get"]
    assert [p["name"] for p in served_op["parameters"]] == ["n"]
    assert "_loom_request" not in (await client.get("/openapi.json")).text
    assert doc["paths"]["/api/body"]["post"]["requestBody"]["required"] is True
