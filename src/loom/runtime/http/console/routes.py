"""The web console at /_loom/ (docs/console.md): server-rendered pages on the admin functions the
JSON admin routes answer with (`process_admin`, `timer_admin`, `admin`), so a screen shows what
the route would, for the same viewer's tenant.

GET  /_loom/                                   -> the processes
GET  /_loom/processes[/{process}[/{key}]]      -> counts; instances (filters, pages); one instance
GET  /_loom/timers, /_loom/dead-letters        -> the pending timers; the dead letters
POST /_loom/timers/{id}/fire                   -> fire a timeout or context timer now
POST /_loom/dead-letters/{id}/redrive          -> redrive a dead letter
GET  /_loom/audit                              -> the audit log: every admin action (the console's too)
GET, POST /_loom/login; POST /_loom/logout     -> the token cookie (access.py)

Every POST answers 303 to the page it came from (`back`), with what happened (`done`); htmx
swaps that page's <main> in, and without JavaScript the browser follows it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode
from uuid import UUID

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from loom.runtime.http.admin import dead_page, redrive
from loom.runtime.http.audit import audit_page, audited
from loom.runtime.http.console.access import (
    COOKIE,
    PREFIX,
    ConsoleAccess,
    NotSignedIn,
    Viewer,
    sign_in,
)
from loom.runtime.http.console.flow_pages import flow_pages
from loom.runtime.http.console.machine import draw
from loom.runtime.http.problems import install_problem_handlers, problem_for
from loom.runtime.http.process_admin import (
    State,
    instance_detail,
    instance_page,
    machine_of,
    process_list,
    read_machines,
)
from loom.runtime.http.timer_admin import fire, timers_page
from loom.runtime.values import clock
from loom.runtime.values.errors import LoomError, NotFound

HERE = Path(__file__).resolve().parent
PAGE = 20
# the age filter's choices: instances started more than this many hours ago
AGES = {"1": "1 hour", "24": "1 day", "168": "1 week"}
_templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def console_app(service_app: FastAPI, access: ConsoleAccess) -> FastAPI:
    """The console's pages and static files, mounted at /_loom on `service_app` (whose service
    they show), built on its first request (`console.mount_console`)."""
    # the sub-app's own problem answers (a bad query's 422); no OpenAPI document of its own
    app = FastAPI(
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    install_problem_handlers(app)

    def get_service(request: Request) -> Any:
        return service_app.state.loom  # started: the console is served by the running app

    def render(
        request: Request, template: str, viewer: Viewer | None, status: int = 200, **values: Any
    ) -> Response:
        html = _templates.get_template(template).render(
            viewer=viewer,
            prefix=PREFIX,
            path=request.url.path,
            here=_here(request),
            done=request.query_params.get("done"),
            **values,
        )
        return HTMLResponse(html, status_code=status)

    def refusal(request: Request, exc: LoomError) -> Response:
        """A refusal as a page for a browser, else as the problem the admin routes answer."""
        if "text/html" not in request.headers.get("accept", ""):
            return problem_for(request, exc)
        return render(request, "refused.html", None, exc.status, problem=exc)

    def login_form(request: Request, error: str | None = None, status: int = 200) -> Response:
        return render(request, "login.html", None, status, error=error)

    async def screen(request: Request, template: str, load: Callable[[Viewer], Any]) -> Response:
        """A screen whose values `load(viewer)` reads (a coroutine of a dict)."""
        try:
            viewer = access.viewer(request)
            values = await load(viewer)
        except NotSignedIn:
            return login_form(request)
        except LoomError as exc:
            return refusal(request, exc)
        return render(request, template, viewer, **values)

    async def act(request: Request, back: str, run: Callable[[Viewer], Any]) -> Response:
        """An action of a form: checked (access, CSRF, read-only), run, then back to the page it
        names (`back`, else `back` here)."""
        form = await _form(request)
        back = form.get("back") or back
        try:
            viewer = access.viewer(request)
            access.check_form(request, viewer, form.get("csrf", ""))
            done = await run(viewer)
        except NotSignedIn:
            return login_form(request, status=401)
        except LoomError as exc:
            return refusal(request, exc)
        return RedirectResponse(_back(back, done), status_code=303)

    @app.get("/", include_in_schema=False)
    async def home() -> Response:
        return RedirectResponse(f"{PREFIX}/processes", status_code=303)

    @app.get("/login", include_in_schema=False)
    async def login_page(request: Request) -> Response:
        if access.authenticator is None:  # nothing to sign in with
            return RedirectResponse(f"{PREFIX}/processes", status_code=303)
        return login_form(request)

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        token = (await _form(request)).get("token", "")
        if request.headers.get("sec-fetch-site", "") in ("cross-site", "same-site"):
            return login_form(request, "sign in on the console's own page", 403)
        try:
            sign_in(access, token)
        except LoomError as exc:
            return login_form(request, exc.detail, exc.status)
        answer = RedirectResponse(f"{PREFIX}/processes", status_code=303)
        answer.set_cookie(
            COOKIE,
            token.strip(),
            path=PREFIX,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return answer

    @app.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        async def out(_: Viewer) -> str:
            return "signed out"

        answer = await act(request, f"{PREFIX}/login", out)
        if answer.status_code == 303:
            answer.delete_cookie(COOKIE, path=PREFIX)
        return answer

    @app.get("/processes", include_in_schema=False)
    async def processes(request: Request) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            service = get_service(request)
            if not service.uses_processes:  # no process tables to read (a deployable without)
                return {"processes": []}
            return {"processes": await process_list(service, viewer.tenant)}

        return await screen(request, "processes.html", load)

    @app.get("/processes/{process}", include_in_schema=False)
    async def instances(
        request: Request,
        process: str,
        state: str = Query(""),
        key: str = Query(""),
        tenant: str = Query(""),
        age: str = Query(""),
        offset: int = Query(0, ge=0),
    ) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            chosen: State | None = "running" if state == "running" else None
            chosen = "completed" if state == "completed" else chosen
            before = clock.now() - timedelta(hours=int(age)) if age in AGES else None
            who = viewer.tenant if viewer.tenant is not None else (tenant.strip() or None)
            filters = (chosen, key.strip() or None, who, before)
            items, total = await instance_page(get_service(request), process, filters, PAGE, offset)
            query = {"state": state, "key": key, "tenant": tenant, "age": age}
            kept = {k: v for k, v in query.items() if v}
            return {
                "process": process,
                "items": items,
                "total": total,
                "offset": offset,
                "page": PAGE,
                "filters": query,
                "ages": AGES,
                "previous": _link(request.url.path, kept, offset - PAGE) if offset > 0 else None,
                "next": _link(request.url.path, kept, offset + PAGE)
                if offset + PAGE < total
                else None,
            }

        return await screen(request, "instances.html", load)

    @app.get("/processes/{process}/{key}", include_in_schema=False)
    async def instance(
        request: Request, process: str, key: str, tenant: str = Query("")
    ) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            who = viewer.tenant if viewer.tenant is not None else (tenant or None)
            found = await instance_detail(get_service(request), process, key, who)
            views = getattr(service_app.state, "loom_console_views", None)
            machine = machine_of(read_machines(views), found)
            drawing = draw(machine) if machine is not None else None
            return {"process": process, "instance": found, "drawing": drawing}

        return await screen(request, "instance.html", load)

    @app.get("/timers", include_in_schema=False)
    async def timers(request: Request, offset: int = Query(0, ge=0)) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            items, total = await timers_page(get_service(request), PAGE, offset, viewer.tenant)
            return _paged(request, items, total, offset)

        return await screen(request, "timers.html", load)

    @app.post("/timers/{id}/fire", include_in_schema=False)
    async def fire_timer(request: Request, id: str) -> Response:
        async def run(viewer: Viewer) -> str:
            service = get_service(request)
            fired = await fire(service, id, viewer.tenant)
            await audited(
                service,
                request,
                "fire",
                [id],
                {"kind": fired.kind, "via": "console"},
                fired.outcome,
                viewer.tenant,
                _who(viewer),
            )
            return f"{fired.kind} {fired.outcome}"

        return await act(request, f"{PREFIX}/timers", run)

    @app.get("/dead-letters", include_in_schema=False)
    async def dead_letters(request: Request, offset: int = Query(0, ge=0)) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            service = get_service(request)
            items, total = await dead_page(service, PAGE, offset, None, viewer.tenant)
            return _paged(request, items, total, offset)

        return await screen(request, "dead_letters.html", load)

    @app.post("/dead-letters/{id}/redrive", include_in_schema=False)
    async def redrive_one(request: Request, id: UUID) -> Response:
        async def run(viewer: Viewer) -> str:
            service = get_service(request)
            if not await redrive(service, id, viewer.tenant):
                raise NotFound("DeadLetter", id, f"no dead letter has the id {id}")
            await audited(
                service,
                request,
                "redrive",
                [id],
                {"via": "console"},
                "redriven=1",
                viewer.tenant,
                _who(viewer),
            )
            return "redriven"

        return await act(request, f"{PREFIX}/dead-letters", run)

    @app.get("/audit", include_in_schema=False)
    async def audit_log(request: Request, offset: int = Query(0, ge=0)) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            service = get_service(request)
            items: list[Any] = []
            total = 0
            if service.channels or service.uses_processes:  # the services that keep one
                items, total = await audit_page(service, PAGE, offset, viewer.tenant)
            return _paged(request, items, total, offset)

        return await screen(request, "audit.html", load)

    flow_pages(app, screen, get_service)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    return app


async def _form(request: Request) -> dict[str, str]:
    """The fields of a console form (urlencoded, as its pages post them; the last of a repeated
    name). Read here rather than by FastAPI's `Form`, which needs python-multipart."""
    body = (await request.body()).decode("utf-8", "replace")
    return dict(parse_qsl(body, keep_blank_values=True))


def _who(viewer: Viewer) -> str | None:
    """The audit log's actor for a console user: its name when a token said who (else the
    request's address says: `loopback` or `anonymous`)."""
    return None if viewer.name == "local" else viewer.name


def _paged(request: Request, items: list[Any], total: int, offset: int) -> dict[str, Any]:
    path = request.url.path
    return {
        "items": items,
        "total": total,
        "offset": offset,
        "page": PAGE,
        "previous": _link(path, {}, offset - PAGE) if offset > 0 else None,
        "next": _link(path, {}, offset + PAGE) if offset + PAGE < total else None,
    }


def _link(path: str, query: dict[str, str], offset: int) -> str:
    return f"{path}?{urlencode({**query, 'offset': max(0, offset)})}"


def _here(request: Request) -> str:
    """The page's own path and query, where its forms come back to (without `done`)."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "done"]
    return request.url.path + (f"?{urlencode(query)}" if query else "")


def _back(back: str, done: str) -> str:
    """`back` (a console page, never another site's) with what happened."""
    if not back.startswith(f"{PREFIX}/") or back.startswith("//"):
        back = f"{PREFIX}/processes"
    joiner = "&" if "?" in back else "?"
    return f"{back}{joiner}{urlencode({'done': done})}"
