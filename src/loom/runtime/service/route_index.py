"""Finding a request's route without trying every route of the app.

FastAPI tries an app's routes in turn, each with its own check, so a request to a route declared
late pays for every route before it: in one context of 1,000 aggregates (4,100 routes), a request
to the last aggregate cost 4.7 times one to the first (bench/routes.py). Every `LoomRoute` knows
its literal prefix and answers "no match" for a path that does not start with it, so the routes
that can match a path are known from the path's segments alone. `RouteIndex` keeps them in a tree
of segments and tries only those, in the app's order: the route chosen is the one FastAPI's loop
would choose, with the same scope, the same handling.

Whatever the index does not decide goes to FastAPI's own routing, unchanged: a path no candidate
matches in full (405, a redirect of its trailing slash, a low-priority route, 404), a websocket, FastAPI's own telemetry, form limits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi.routing import APIRouter
from starlette._utils import get_route_path  # FastAPI's routing imports it from there too
from starlette.routing import BaseRoute, Match
from starlette.types import Receive, Scope, Send

from loom.runtime.service.routing import LoomRoute


@dataclass(eq=False)
class _Node:
    """The routes whose literal prefix ends in this node's segments, and below it the others."""

    own: list[tuple[int, BaseRoute]] = field(default_factory=list)
    children: dict[str, _Node] = field(default_factory=dict)
    # the routes that may match a path whose walk ends here, in the app's order (see `_finish`)
    candidates: tuple[BaseRoute, ...] = ()


def _segments(route: LoomRoute) -> list[str]:
    """The whole segments a matching path starts with: those of the literal prefix, its last one
    too when the route has no parameter (then the path is the literal, exactly)."""
    parts = route.literal_prefix.split("/")
    return parts if route.literal_prefix == route.path_format else parts[:-1]


class RouteIndex:
    """The router's dispatch (its `middleware_stack`): the index first, FastAPI's routing for
    the rest. Rebuilt when the router's list of routes is another list or has another length
    (routes added or removed after the app was made; one replaced in place is not seen)."""

    def __init__(self, router: APIRouter) -> None:
        self.router = router
        self.fallback = router.app
        self._routes: list[BaseRoute] | None = None
        self._count = -1
        self._root = _Node()

    def _build(self) -> None:
        routes = self.router.routes
        root, anywhere = _Node(), []
        for position, route in enumerate(routes):
            if isinstance(route, LoomRoute):
                node = root
                for segment in _segments(route):
                    node = node.children.setdefault(segment, _Node())
                node.own.append((position, route))
            else:  # decides by itself, on every path
                anywhere.append((position, route))
        _finish(root, anywhere)
        self._root, self._routes, self._count = root, routes, len(routes)

    def candidates(self, path: str) -> tuple[BaseRoute, ...]:
        """The routes that may match `path`, in the app's order."""
        routes = self.router.routes
        if routes is not self._routes or len(routes) != self._count:
            self._build()
        node = self._root
        for segment in path.split("/"):
            child = node.children.get(segment)
            if child is None:
                break
            node = child
        return node.candidates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope.get("fastapi.telemetry") is None
            and not getattr(self.router, "form_limits", None)
        ):
            for route in self.candidates(get_route_path(scope)):
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    if "fastapi" in child_scope:  # FastAPI's nested bookkeeping: its own way
                        break
                    if "router" not in scope:
                        scope["router"] = self.router
                    scope.update(child_scope)
                    await route.handle(scope, receive, send)
                    return
        await self.fallback(scope, receive, send)


def _finish(root: _Node, anywhere: list[tuple[int, BaseRoute]]) -> None:
    """Each node's candidates: its own routes, its ancestors' and those that match anywhere, in
    the app's order (a path's walk stops at the deepest node its segments reach)."""
    stack: list[tuple[_Node, list[tuple[int, BaseRoute]]]] = [(root, anywhere)]
    while stack:
        node, above = stack.pop()
        mine = sorted([*above, *node.own], key=lambda pair: pair[0])
        node.candidates = tuple(route for _, route in mine)
        stack.extend((child, mine) for child in node.children.values())


def index_routes(router: APIRouter) -> None:
    """Give `router` the index. A router with middleware of its own keeps its dispatch."""
    if router.middleware_stack == router.app:
        router.middleware_stack = RouteIndex(router)
