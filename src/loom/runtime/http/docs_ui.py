"""`/docs` (Swagger UI) and `/redoc` from assets installed with the package, never a CDN: the pages
work offline, behind a firewall, and load nothing from a third party.

The assets are fastapi-offline's copy of swagger-ui-dist and ReDoc (a PyPI dependency, kept up to
date there): no JavaScript is vendored in this repository, and nothing is downloaded at run time.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS = "/docs/assets"  # swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js, favicon.png


def _assets_dir() -> Path:
    import fastapi_offline  # its package holds only the assets we serve (and a helper we do not use)

    return Path(fastapi_offline.__file__).parent / "static"


def add_docs_pages(app: FastAPI, docs_url: str | None, redoc_url: str | None) -> None:
    """Serve the assets under `ASSETS`, Swagger UI at `docs_url` and ReDoc at `redoc_url` (None:
    not served), each page pointing at the assets by the request's root path."""
    if docs_url is None and redoc_url is None:
        return
    app.mount(ASSETS, StaticFiles(directory=_assets_dir()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    title = app.title

    if docs_url is not None:
        oauth2_redirect = app.swagger_ui_oauth2_redirect_url

        async def swagger_ui(request: Request) -> HTMLResponse:
            root = request.scope.get("root_path", "")
            return get_swagger_ui_html(
                openapi_url=root + openapi_url,
                title=f"{title} - Swagger UI",
                oauth2_redirect_url=oauth2_redirect and root + oauth2_redirect,
                swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
                swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
                swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
                swagger_ui_parameters=app.swagger_ui_parameters,
            )

        app.add_api_route(docs_url, swagger_ui, methods=["GET"], include_in_schema=False)
        if oauth2_redirect:

            async def swagger_ui_redirect() -> HTMLResponse:
                return get_swagger_ui_oauth2_redirect_html()

            app.add_api_route(
                oauth2_redirect, swagger_ui_redirect, methods=["GET"], include_in_schema=False
            )

    if redoc_url is not None:

        async def redoc(request: Request) -> HTMLResponse:
            root = request.scope.get("root_path", "")
            return get_redoc_html(
                openapi_url=root + openapi_url,
                title=f"{title} - ReDoc",
                redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
                redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
                with_google_fonts=False,
            )

        app.add_api_route(redoc_url, redoc, methods=["GET"], include_in_schema=False)
