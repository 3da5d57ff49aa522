"""The web console at /_loom/ (docs/console.md), mounted on every service unless --no-console.

Its pages (`routes.py`: Jinja2, the admin functions of the processes, timers and dead letters)
are loaded on the console's first request, not when the service starts: a service nobody opens
the console of loads none of them (tests/cli/test_run_imports.py)."""

from __future__ import annotations

from typing import Any

from starlette.types import Receive, Scope, Send

from loom.runtime.http.console.access import PREFIX, ConsoleAccess


class _Console:
    """The console's app, built on its first request."""

    def __init__(self, service_app: Any, access: ConsoleAccess) -> None:
        self.service_app = service_app
        self.access = access
        self.app: Any = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.app is None:
            from loom.runtime.http.console.routes import console_app

            self.app = console_app(self.service_app, self.access)
        await self.app(scope, receive, send)


def mount_console(app: Any) -> None:
    """Mount the console at /_loom on `app` (after its token verifier is set), with the
    settings the environment gives now (as the rest of the app reads them when it is built)."""
    access = ConsoleAccess.from_env(getattr(app.state, "loom_auth", None))
    app.mount(PREFIX, _Console(app, access), name="loom-console")
