"""The route index (`runtime/service/route_index.py`) chooses, for every request, the route that
FastAPI's own loop over all the routes would choose: the same answers, over HTTP, as the same app
without it, on paths of every shape; it tries only the routes a path can match; it sees routes
added after the app was made; and a request under a root path is routed as before."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import MetaData
from starlette.convertors import Convertor, register_url_convertor
from starlette.routing import Match

from loom.runtime import LoomRoute, create_app
from loom.runtime.service.route_index import RouteIndex

AGGREGATES = [f"item{n}s" for n in range(1, 13)]  # item1s is a prefix of item10s, item11s, …


def _router() -> APIRouter:
    """Routes of every shape a generated service has, and some it has not, in an order where
    the first match matters."""
    router = APIRouter(route_class=LoomRoute)

    def add(path: str, method: str = "GET") -> None:
        async def endpoint(**params: Any) -> dict[str, Any]:
            return {"route": f"{method} {path}", "params": params}

        _signature(endpoint, re.findall(r"\{(\w+)", path))
        router.add_api_route(path, endpoint, methods=[method], operation_id=f"{method}{path}")

    add("/api/{kind}/special")  # declared first: it answers /api/item1s/special, not the next
    for name in AGGREGATES:
        add(f"/api/{name}")
        add(f"/api/{name}", "POST")
        add(f"/api/{name}/special")
        add(f"/api/{name}/{{id}}")
        add(f"/api/{name}/{{id}}/deposit", "POST")
    add("/api/files/v{version}")  # a parameter inside a segment
    add("/api/workflows/transfer", "POST")
    add("/api/tail/{rest:path}")
    add("/")
    return router


def _signature(endpoint: Any, names: list[str]) -> None:
    """The endpoint takes its path's parameters (FastAPI reads them from the signature)."""
    params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names]
    endpoint.__signature__ = inspect.Signature(params)


@pytest.fixture(scope="module")
def apps() -> tuple[FastAPI, FastAPI]:
    """The app with its index, and the same app routed by FastAPI alone."""
    indexed = _app()
    plain = _app()
    assert isinstance(plain.router.middleware_stack, RouteIndex)
    plain.router.middleware_stack = plain.router.app
    return indexed, plain


def _app() -> FastAPI:
    return create_app(
        title="routes", metadata=MetaData(), routers=[_router()], database_url="sqlite+aiosqlite://"
    )


@pytest.fixture
async def clients(
    apps: tuple[FastAPI, FastAPI],
) -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    indexed, plain = apps
    async with (
        indexed.router.lifespan_context(indexed),
        plain.router.lifespan_context(plain),
        _client(indexed) as a,
        _client(plain) as b,
    ):
        yield a, b


def _client(app: FastAPI, root_path: str = "") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, root_path=root_path)
    return httpx.AsyncClient(transport=transport, base_url="http://loom.test")


async def _same(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient], method: str, path: str
) -> httpx.Response:
    indexed, plain = clients
    ours, theirs = await indexed.request(method, path), await plain.request(method, path)
    assert (ours.status_code, ours.headers.get("location")) == (
        theirs.status_code,
        theirs.headers.get("location"),
    ), path
    assert ours.content == theirs.content, path
    return ours


@pytest.mark.parametrize(
    ("method", "path", "status", "route"),
    [
        ("GET", "/api/item1s", 200, "GET /api/item1s"),
        ("POST", "/api/item10s", 200, "POST /api/item10s"),
        ("GET", "/api/item12s/42", 200, "GET /api/item12s/{id}"),
        ("POST", "/api/item11s/42/deposit", 200, "POST /api/item11s/{id}/deposit"),
        ("GET", "/api/item1s/special", 200, "GET /api/{kind}/special"),  # the first declared
        ("GET", "/api/files/v3", 200, "GET /api/files/v{version}"),
        ("GET", "/api/tail/a/b/c", 200, "GET /api/tail/{rest:path}"),
        ("GET", "/", 200, "GET /"),
        ("DELETE", "/api/item1s/42", 405, None),  # a route matches the path, not the method
        ("GET", "/api/item1s/42/deposit", 405, None),
        ("GET", "/api/item1s/", 307, None),  # the trailing slash redirected
        ("GET", "/api/item13s", 404, None),
        ("GET", "/api/item1", 404, None),
        ("GET", "/api/files/x3", 404, None),
        ("GET", "/api//item1s", 404, None),
        ("GET", "/api/item1s/42/deposit/more", 404, None),
        ("GET", "/healthz", 200, None),  # the app's own routes, after the model's
        ("GET", "/openapi.json", 200, None),
    ],
)
async def test_the_route_chosen_is_fastapis(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
    method: str,
    path: str,
    status: int,
    route: str | None,
) -> None:
    answer = await _same(clients, method, path)
    assert answer.status_code == status
    if route is not None:
        assert answer.json()["route"] == route


_SEGMENTS = st.sampled_from(
    # a path starting with "//" would be read as a host by the client
    [
        "api",
        "item1s",
        "item10s",
        "item1",
        "special",
        "42",
        "deposit",
        "files",
        "v3",
        "tail",
        "workflows",
        "transfer",
        "",
        "health",
        "x",
    ]
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(_SEGMENTS, max_size=5).filter(lambda s: s[:1] != [""]),
    st.sampled_from(["GET", "POST", "DELETE"]),
)
async def test_any_path_is_answered_as_without_the_index(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient], segments: list[str], method: str
) -> None:
    await _same(clients, method, "/" + "/".join(segments))


def test_a_path_tries_only_the_routes_it_can_match(apps: tuple[FastAPI, FastAPI]) -> None:
    indexed, _ = apps
    index = indexed.router.middleware_stack
    assert isinstance(index, RouteIndex)
    everywhere = [r for r in indexed.router.routes if not isinstance(r, LoomRoute)]
    tried = index.candidates("/api/item12s/42/deposit")
    assert [getattr(r, "path", None) for r in tried if isinstance(r, LoomRoute)] == [
        "/api/{kind}/special",
        "/api/item12s",  # GET and POST: matched whole, they answer no match here at once
        "/api/item12s",
        "/api/item12s/{id}",
        "/api/item12s/{id}/deposit",
    ]  # not /api/item12s/special: a path without parameters is matched whole
    assert len(tried) == 5 + len(everywhere)
    routes = list(indexed.router.routes)
    assert [r for r in routes if r in tried] == list(tried)  # in the app's order


async def test_a_route_added_later_is_found() -> None:
    app = _app()
    late = APIRouter(route_class=LoomRoute)

    @late.get("/api/late/{n}")
    async def later(n: int) -> int:
        return n + 1

    app.include_router(late)
    async with app.router.lifespan_context(app), _client(app) as client:
        assert (await client.get("/api/item1s")).status_code == 200
        assert (await client.get("/api/late/41")).json() == 42  # after the index was built


async def test_a_request_under_a_root_path_is_routed_as_before() -> None:
    app = _app()
    async with app.router.lifespan_context(app), _client(app, root_path="/svc") as client:
        answer = await client.get("/svc/api/item10s/7")
        assert answer.json()["route"] == "GET /api/item10s/{id}"
        assert (await client.get("/svc/api/item10s/7/deposit")).status_code == 405


class _AnyText(Convertor[str]):
    """An app's own converter whose values may hold slashes."""

    regex = ".+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("loom_test_any", _AnyText())

_SHAPES = [
    "/api/files/{rest:loom_test_any}/end",
    "/api/items/{id}/deposit",
    "/api/items/{id:int}",
    "/api/items/{id:uuid}/x",
    "/api/v{n:float}/items",
    "/api/tail/{rest:path}",
    "/api/tail/{rest:path}/end",
    "/api/items",
    "/api/{a}/{b}",
    "/",
]
_PIECES = st.sampled_from(
    [
        "api",
        "items",
        "files",
        "7",
        "x",
        "deposit",
        "tail",
        "end",
        "v1.5",
        "v",
        "",
        "0190f5a4-0000-7000-8000-000000000001",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=6), st.sampled_from(["GET", "POST"]))
@example(["api", "files", "7", "x", "end"], "GET")  # the app's own converter takes "7/x"
@example(["api", "tail", "7", "x", "end"], "GET")
@example(["api", "items", "7", "x", "deposit"], "POST")
def test_a_loom_route_rejects_only_what_starlette_would(pieces: list[str], method: str) -> None:
    """`LoomRoute.matches` answers "no match" on its literals and its number of segments before
    any regex: never for a path Starlette's own matching would take."""
    router = APIRouter(route_class=LoomRoute)
    for shape in _SHAPES:
        router.add_api_route(shape, _endpoint, methods=["GET"], operation_id=shape)
    path = "/" + "/".join(pieces)
    scope = {"type": "http", "path": path, "method": method, "root_path": ""}
    for route in router.routes:
        assert isinstance(route, LoomRoute)
        ours, theirs = route.matches(scope), APIRoute.matches(route, scope)
        assert ours[0] == theirs[0], (route.path, path)
        if ours[0] is not Match.NONE:
            assert ours[1] == theirs[1]


async def _endpoint() -> None:
    return None
