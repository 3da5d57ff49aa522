from __future__ import annotations

import atexit
import hashlib
import importlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import httpx

from loom.build.package import build_model, import_package
from loom.model.ir import Model
from loom.runtime.values.tracing import providing
from loom.testing._clock import VirtualClock

if TYPE_CHECKING:
    from loom.serving.settings import ServiceSettings

_cache_root: Path | None = None
_built: dict[str, ModuleType] = {}


class ModelError(Exception):
    """The model given to the test kit does not compile; the message holds the diagnostics."""


def _root() -> Path:
    global _cache_root
    if _cache_root is None:
        _cache_root = Path(tempfile.mkdtemp(prefix="loom-testing-"))
        atexit.register(shutil.rmtree, _cache_root, True)
    return _cache_root


def model_digest(model_files: Sequence[str | Path]) -> str:
    """What a build of these files is cached under: their names and contents."""
    key = hashlib.sha256()
    for p in model_files:
        key.update(str(p).encode() + b"\0" + Path(p).read_bytes() + b"\0")
    return key.hexdigest()[:16]


def compile_model(model_files: Sequence[str | Path]) -> Model:
    """The model of these files; `ModelError`, with the rendered diagnostics, when they do not
    compile."""
    from loom.lang import compile_files, render_text

    result = compile_files([str(p) for p in model_files])
    if not result.ok or result.model is None:
        raise ModelError(render_text(result.diagnostics, result.sources))
    return result.model


def generate(model: Model, folder: str) -> ModuleType:
    """Generate `model` into `folder` of the kit's temporary root, import it and answer its `main`
    module."""
    out = _root() / folder
    build_model(model, out)
    return import_package(out)


def build_service(model_files: Sequence[str | Path]) -> ModuleType:
    """Compile and generate a model once per process (keyed by the files' contents) and return the
    generated package's `main` module."""
    digest = model_digest(model_files)
    if digest not in _built:
        _built[digest] = generate(compile_model(model_files), f"svc_{digest}")
    return _built[digest]


class ServiceClient(httpx.AsyncClient):
    """An HTTP client wired to one running, in-process service.

    A request returns only after every reaction it caused has run: the in-process ones ran before
    the service answered, and after each response the client awaits `service.settle()`, which
    delivers what the request wrote to the outbox — and what those deliveries wrote, chains
    included — until nothing is due. So a follow-up GET sees the terminal state with no sleeps.
    Pass `settle=False` to observe the state in between (then `await client.settle()` by hand).
    A retry scheduled for later (a failing reactor's backoff) is not due, so it is not awaited."""

    def __init__(self, app: Any, main: ModuleType, *, settle: bool = True) -> None:
        super().__init__(transport=httpx.ASGITransport(app=app), base_url="http://loom.test")
        self.app = app
        self._main = main
        self.settles = settle

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        response = await super().send(request, **kwargs)
        if self.settles:
            await self.settle()
        return response

    async def settle(self) -> None:
        """Deliver everything due in the outbox, chains included (a no-op without channels)."""
        service = getattr(self.app.state, "loom", None)
        if service is not None:
            await service.settle()

    @property
    def service(self) -> Any:
        """The runtime `Service` of the app: `.events` (subscribe), `.faults`, `.engine`."""
        return self.app.state.loom

    def module(self, dotted: str) -> ModuleType:
        """A module of the generated package, e.g. `client.module("banking.domain")`."""
        package = self._main.__name__.rsplit(".", 1)[0]
        return importlib.import_module(f"{package}.{dotted}")


@asynccontextmanager
async def serve(
    model_files: Sequence[str | Path],
    database_url: str,
    *,
    settle: bool = True,
    clock: VirtualClock | None = None,
    settings: ServiceSettings | None = None,
    tracer_provider: Any = None,
) -> AsyncIterator[ServiceClient]:
    """Serve the model in-process on `database_url` and yield a client for it (see
    `ServiceClient`: each request returns after every reaction it caused, unless `settle=False`).

    With `clock`, the service runs on that virtual clock: the clock is installed for the block
    (unless it already is), the background scheduler is off, and `clock.advance(...)` drives this
    service's timeouts and timers (the service is detached from the clock when the block ends).

    With `settings`, the service runs with those `loom run` options (`loom.serving.settings`:
    the token verification, the body limit, the lifetimes and waits, the pool), as `loom run`
    gives them: by their `LOOM_*` variables, set for the block. The limits of the connections
    (URL and header sizes, the timeouts) are uvicorn's, under `loom run` only.

    With `tracer_provider` (an OpenTelemetry `TracerProvider`, e.g. with an
    `InMemorySpanExporter`), the service traces to it (docs/observability.md#traces)."""
    main = build_service(model_files)
    variables = {} if settings is None else settings.variables()
    if clock is not None:
        variables["LOOM_SCHEDULER"] = "off"
    async with AsyncExitStack() as stack:
        if clock is not None and not clock.installed:
            stack.enter_context(clock)
        # the variables while the app is built and started, when it reads them: another service
        # served meanwhile (in the block) does not see them
        with _environment(variables), providing(tracer_provider):
            app = main.build_app(database_url)
            await stack.enter_async_context(app.router.lifespan_context(app))
        client = await stack.enter_async_context(ServiceClient(app, main, settle=settle))
        if clock is not None:
            clock.attach(client.service)
        try:
            yield client
        finally:
            if clock is not None:
                clock.detach(client.service)


@contextmanager
def _environment(variables: Mapping[str, str]) -> Iterator[None]:
    """The variables set for the block, then back as they were: the generated `build_app` takes
    only the URL, and the app reads the rest from the environment when it is built and started."""
    previous = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
