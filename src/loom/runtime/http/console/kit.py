"""What the console's screens share: `routes.py` and the modules of screens it adds
(`outbox_pages.py`, `timer_pages.py`, `dead_letter_pages.py`), each an `add_…(app, screens)`.

`Screens` is what such a module needs of the console app: the running service, `screen` (a page
whose values a coroutine of the viewer loads; refusals and the login form handled) and `act` (a
form's action: access, CSRF and read-only checked, then 303 back to its page with what it did).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import Response

from loom.runtime.http.console.access import PREFIX, Viewer, read_only

PAGE = 20  # rows to a page

Load = Callable[[Viewer], Awaitable[dict[str, Any]]]
Run = Callable[[Viewer], Awaitable[str]]


@dataclass(frozen=True)
class Screens:
    service: Callable[[Request], Any]
    screen: Callable[[Request, str, Load], Awaitable[Response]]
    act: Callable[[Request, str, Run], Awaitable[Response]]
    views: Callable[[], Path | None]  # the generated package's `console.json`


async def fields(request: Request) -> list[tuple[str, str]]:
    """The fields of a console form (urlencoded, as its pages post them), repeated names kept.
    Read here rather than by FastAPI's `Form`, which needs python-multipart."""
    body = (await request.body()).decode("utf-8", "replace")
    return parse_qsl(body, keep_blank_values=True)


async def form(request: Request) -> dict[str, str]:
    """The fields of a console form (the last of a repeated name)."""
    return dict(await fields(request))


def writable(viewer: Viewer) -> None:
    """A page that leads to an action (a confirmation, a form) is refused when read-only."""
    if viewer.read_only:
        raise read_only()


def who(viewer: Viewer) -> str | None:
    """The audit log's actor for a console user: its name when a token said who (else the
    request's address says: `loopback` or `anonymous`)."""
    return None if viewer.name == "local" else viewer.name


def paged(
    request: Request,
    items: list[Any],
    total: int,
    offset: int,
    query: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A page of `items` with its links to the previous and next (keeping `query`)."""
    path, kept = request.url.path, query or {}
    return {
        "items": items,
        "total": total,
        "offset": offset,
        "page": PAGE,
        "previous": link(path, kept, offset - PAGE) if offset > 0 else None,
        "next": link(path, kept, offset + PAGE) if offset + PAGE < total else None,
    }


def link(path: str, query: dict[str, str], offset: int) -> str:
    return f"{path}?{urlencode({**query, 'offset': max(0, offset)})}"


def here(request: Request) -> str:
    """The page's own path and query, where its forms come back to (without `done`)."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "done"]
    return request.url.path + (f"?{urlencode(query)}" if query else "")


def console_page(to: str | None, default: str) -> str:
    """`to` when it is a page of the console (never another site's), else `default`."""
    if not to or not to.startswith(f"{PREFIX}/") or to.startswith("//"):
        return default
    return to


def back(to: str, done: str) -> str:
    """`to` (a console page, never another site's) with what happened."""
    to = console_page(to, f"{PREFIX}/processes")
    joiner = "&" if "?" in to else "?"
    return f"{to}{joiner}{urlencode({'done': done})}"
