"""The web console at /_loom/ (docs/console.md): server-rendered pages on the admin functions the
JSON admin routes answer with (`process_admin`, `timer_admin`, `admin`), so a screen shows what
the route would, for the same viewer's tenant.

GET  /_loom/                                   -> the processes
GET  /_loom/processes[/{process}[/{key}]]      -> counts; instances (filters, pages); one instance
/_loom/outbox, /_loom/timers…, /_loom/dead-letters…  -> outbox_pages, timer_pages, dead_letter_pages
GET  /_loom/audit                              -> the audit log: every admin action (the console's too)
GET  /_loom/model[/counts]                     -> the model's diagrams, live counts (model_pages.py)
GET, POST /_loom/login; POST /_loom/logout     -> the token cookie (access.py)

Every POST answers 303 to the page it came from (`back`), with what happened (`done`); htmx
swaps that page's <main> in, and without JavaScript the browser follows it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from loom.runtime.http.audit import acting, audit_page
from loom.runtime.http.console.access import (
    COOKIE,
    PREFIX,
    ConsoleAccess,
    NotSignedIn,
    Viewer,
    sign_in,
)
from loom.runtime.http.console.dead_letter_pages import add_dead_letter_pages
from loom.runtime.http.console.flow_pages import flow_pages
from loom.runtime.http.console.kit import PAGE, Screens, back, form, here, link, paged, who
from loom.runtime.http.console.machine import draw
from loom.runtime.http.console.model_pages import add_model_pages
from loom.runtime.http.console.outbox_pages import add_outbox_pages
from loom.runtime.http.console.timer_pages import add_timer_pages
from loom.runtime.http.problems import install_problem_handlers, problem_for
from loom.runtime.http.process_admin import (
    State,
    instance_detail,
    instance_page,
    machine_of,
    process_list,
    read_machines,
)
from loom.runtime.values import clock
from loom.runtime.values.errors import LoomError

HERE = Path(__file__).resolve().parent
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
            here=here(request),
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

    async def act(request: Request, to: str, run: Callable[[Viewer], Any]) -> Response:
        """An action of a form: checked (access, CSRF, read-only), run (its audit rows the
        viewer's, via the console), then back to the page it names (`back`, else `to`)."""
        fields = await form(request)
        to = fields.get("back") or to
        try:
            viewer = access.viewer(request)
            access.check_form(request, viewer, fields.get("csrf", ""))
            with acting(who(viewer), viewer.tenant, "console"):
                done = await run(viewer)
        except NotSignedIn:
            return login_form(request, status=401)
        except LoomError as exc:
            return refusal(request, exc)
        return RedirectResponse(back(to, done), status_code=303)

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
        token = (await form(request)).get("token", "")
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
            if not service.uses_processes:  # no process table to count (a service of channels)
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
                "previous": link(request.url.path, kept, offset - PAGE) if offset > 0 else None,
                "next": link(request.url.path, kept, offset + PAGE)
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
            machine = machine_of(read_machines(views(service_app)), found)
            drawing = draw(machine) if machine is not None else None
            return {"process": process, "instance": found, "drawing": drawing}

        return await screen(request, "instance.html", load)

    @app.get("/audit", include_in_schema=False)
    async def audit_log(request: Request, offset: int = Query(0, ge=0)) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            service = get_service(request)
            items: list[Any] = []
            total = 0
            if service.channels or service.uses_processes:  # the services that keep one
                items, total = await audit_page(service, PAGE, offset, viewer.tenant)
            return paged(request, items, total, offset)

        return await screen(request, "audit.html", load)

    screens = Screens(get_service, screen, act, lambda: views(service_app))
    add_outbox_pages(app, screens)
    add_timer_pages(app, screens)
    add_dead_letter_pages(app, screens)
    add_model_pages(app, service_app, screen)
    flow_pages(app, screen, get_service)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    return app


def views(service_app: FastAPI) -> Path | None:
    """The generated package's `console.json`: the model as the console draws it."""
    found: Path | None = getattr(service_app.state, "loom_console_views", None)
    return found
