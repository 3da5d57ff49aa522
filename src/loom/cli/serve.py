"""What `loom run` does (`loom.cli.run` declares the command): build the model into its cache
folder (or reuse an unchanged build), check the database, and serve the service with uvicorn.
"""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from loom.build.cache import cached_build_for, model_names, reuse_build, write_cached_build
from loom.build.package import BuildError, import_package
from loom.build.sources import NoModelFiles, model_files, read_model
from loom.cli.compile import compile_model
from loom.cli.output import Color, Format, collector_paused, colour_variables, echo
from loom.cli.reload import handed_socket, serve_on
from loom.migrate.folder import MigrationsError
from loom.serving.connections import refuse_unmatched, set_apis, set_brokers
from loom.serving.database import default_database, safe_url
from loom.serving.held import Held, OptionError, declared_deployables, held_for
from loom.serving.options import apply, extern_path

if TYPE_CHECKING:
    from loom.runtime.http.edge_limits import EdgeLimits
    from loom.serving.settings import RunSettings

T = TypeVar("T")

# set by `loom up` for its children: it printed the model's warnings already, once
WARNINGS_SHOWN = "LOOM_UP_WARNINGS_SHOWN"


class Stop(Exception):
    """Stop `loom run` with this exit code (its message, when it has one, already printed)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _fail(message: str, code: int = 2) -> Stop:
    echo(f"error: {message}", err=True)
    return Stop(code)


def _url_arg(database_url: str | None) -> str:
    """How the command line named the database, for the commands a refusal suggests."""
    return f" --database-url {safe_url(database_url)}" if database_url else ""


def check_database(
    files: list[Path],
    main: ModuleType,
    url: str,
    database_url: str | None,
    *,
    migrate: bool,
    held: Held | None = None,
) -> list[str]:
    """The database check before serving (`loom.migrate.serve`) for the service of `held` (the
    whole model by default): the lines to print; `Stop(2)` with what differs and the command
    that fixes it."""
    # here, not at the top: the migration engine (and SQLAlchemy) only once the build is ready
    from loom.migrate.database import DatabaseUnreachable
    from loom.migrate.serve import prepare_database

    try:
        return asyncio.run(
            prepare_database(files, main, url, _url_arg(database_url), migrate=migrate, held=held)
        )
    except DatabaseUnreachable as exc:
        raise _fail(f"{exc} ({safe_url(url)})") from None
    except MigrationsError as exc:
        raise _fail(str(exc)) from None


def serve(paths: list[Path], options: RunSettings, color: Color = Color.auto) -> int:
    """`loom run` of the model the paths name (a folder: its `*.loom`): the exit code when it stops
    without serving (0 after serving until stopped)."""
    try:
        _serve(model_files(paths), options, color)
    except NoModelFiles as exc:
        echo(f"error: {exc}", err=True)
        return 2
    except Stop as stop:
        return stop.code
    return 0


def _listenable(host: str, port: int) -> None:
    """Stop with a sentence unless `host:port` can be listened on: uvicorn would find out only
    after the banner and the app's start, and say so among its shutdown lines (a port in use;
    the settings refused a port out of range already). A probe, bound and closed at once: a server that
    takes the port meanwhile still fails the start, in uvicorn's own words."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in addresses:
            with socket.socket(family, kind, proto) as probe:
                # as uvicorn binds: a port left in TIME_WAIT by a stopped server is free
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise _fail(f"cannot listen on {host}:{port}: {why}") from None


# the collector's first threshold while serving (Python's default: 700). A request or an event
# allocates and frees a few hundred tracked objects, nearly all freed by their reference counts;
# with 700, the objects of the requests in flight are walked (and moved on, to be walked again)
# every few requests, to free next to nothing (a fiftieth of a broker consumer's CPU)
SERVING_THRESHOLD = 10_000


def made_to_serve(make: Callable[[], T]) -> T:
    """What `make` makes, made as `loom run` makes what it serves. What the start makes (the
    modules, the app and its routes) lives as long as the server: the collector stays off while
    it is made, which it would walk again and again finding nothing to free (a twentieth of the
    start), and it is then moved out of the collector's sight for good (`gc.freeze`), so no later
    full collection walks it either (the service's lifespan then freezes what its own start
    made: `runtime/service/app.py`); from then on the collector runs every `SERVING_THRESHOLD`
    allocations. uvicorn is imported with the rest of the start (only now: a refused command
    line never pays for it). The benches serve Loom's apps through it."""
    with collector_paused():
        import uvicorn  # noqa: F401 - frozen with the start

        made = make()
        gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(SERVING_THRESHOLD, middle, oldest)
    return made


def _serve(files: list[Path], options: RunSettings, color: Color) -> None:
    handed = handed_socket()  # a child of `loom run --reload`: it holds the port

    application, limits, log_setup = made_to_serve(
        lambda: _ready(files, options, color, probe=handed is None)
    )
    import uvicorn  # imported by `made_to_serve` already

    # the protocol named, not uvicorn's pick (httptools when installed): it keeps the limits
    how: dict[str, Any] = {"log_level": "info", "http": limits.protocol(), "log_config": log_setup}
    if handed is None:
        uvicorn.run(application, host=options.host, port=options.port, **how)
    else:
        serve_on(uvicorn.Config(application, host=options.host, port=options.port, **how), handed)


def _ready(
    files: list[Path], options: RunSettings, color: Color, *, probe: bool = True
) -> tuple[Any, EdgeLimits, dict[str, Any]]:
    """Everything before serving: the options checked (the address too, when `probe`: not on a
    socket handed down), the model built (or its build reused), the app made and its database
    checked, the banner printed. The app, the limits of the connections it is served with, and
    uvicorn's logging (the `--log-format` asked for)."""
    # the runtime only now: a refused command line never pays for it
    from loom.runtime import AuthConfigError, ExternError
    from loom.runtime.http.edge_limits import EdgeLimits, log_config
    from loom.runtime.values.tracing import traces_endpoint

    if probe:
        _listenable(options.host, options.port)
    try:
        apply(options)
        held = held_for(options.contexts, options.deployable)
        if held.deployable is not None:  # its spans' `loom.deployable`, its traces' service name
            os.environ["LOOM_DEPLOYABLE"] = held.deployable
        set_brokers(options.broker)
        set_apis(options.api)
        limits = EdgeLimits.from_environment()
        if color is not Color.auto:  # auto: the log lines' own test of their stream
            os.environ.update(colour_variables(color, sys.stderr))
        log_setup = log_config()
    except (OptionError, ValueError) as exc:  # ValueError: a bad limit, a bad log format
        raise _fail(str(exc)) from None
    extern_path(files)
    database_url = options.database_url
    try:
        out, state = _build(files, color, held)
        names = model_names(out)
        if names is not None:
            refuse_unmatched(
                options.broker, options.api, names["contexts"], names["channel_sources"]
            )
        url = database_url or default_database(files[0], held)
        service = import_package(out)
        application = service.build_app(url)
        # before the banner: a module that does not import is a line here, not a failed start
        application.state.loom_externs.preload()
    except (BuildError, AuthConfigError, ExternError, OptionError, ValueError) as exc:
        raise _fail(str(exc)) from None  # ValueError: a bad limit or TTL
    _refuse_missing_connections(application)
    for line in check_database(
        files, service, url, database_url, migrate=options.migrate, held=held
    ):
        echo(line)
    served = ", ".join(str(f) for f in files)
    if held.deployable is not None or held.contexts is not None:
        what = f"deployable {held.deployable}" if held.deployable else "contexts"
        served = f"{what} ({', '.join(service.CONTEXTS)}) of {served}"
    host, port = options.host, options.port
    echo(f"serving {served} on http://{host}:{port} ({safe_url(url)})")
    echo(f"  build: {state} {out}")
    auth = application.state.loom_auth
    algorithms = "/".join(getattr(auth, "algorithms", ()))
    echo(
        f"  auth: bearer JWT ({algorithms})"
        if auth is not None
        else "  auth: none (every request is anonymous)"
    )
    echo(f"  OpenAPI: http://{host}:{port}/openapi.json   docs: http://{host}:{port}/docs")
    if not options.no_console:  # docs/console.md
        mode = " (read-only)" if options.console_read_only else ""
        echo(f"  console: http://{host}:{port}/_loom/{mode}")
    exported = traces_endpoint()
    if exported is not None:
        echo(f"  traces: OTLP/HTTP to {exported}")
    return application, limits, log_setup


def _refuse_missing_connections(application: Any) -> None:
    """Exit 2 before the banner when the service would refuse to start for want of a broker or
    of another deployable's URL: one `error:` line per missing piece."""
    from loom.runtime import StartupRefused  # loaded with the app already: a lookup

    try:
        missing = asyncio.run(application.state.loom_missing_connections())
    except StartupRefused as refused:  # a connection given, but one it can never use
        echo(f"error: {refused}", err=True)
        raise Stop(2) from None
    for reason in missing:
        echo(f"error: {reason}", err=True)
    if missing:
        raise Stop(2)


def _build(files: list[Path], color: Color, held: Held) -> tuple[Path, str]:
    """`loom run`'s build of the model (of the contexts `held`), and what became of it: reused
    as it is when the model files are unchanged (their warnings shown again), else compiled and
    written."""
    sources = read_model(files)  # None: a file cannot be read, and compiling says which
    build = cached_build_for(files, sources, held.key()) if sources is not None else None
    # `loom up` printed the model's warnings once for all its deployables
    shown = os.environ.get(WARNINGS_SHOWN) != "1"
    if build is not None:
        warnings = reuse_build(build)
        if warnings is not None:
            if warnings and shown:
                echo(warnings, err=True)
            return build.out, "reused (the model is unchanged: not compiled)"
    result = compile_model(
        files, Format.text, color, quiet_ok=True, sources=sources, warnings=shown
    )
    if not result.ok or result.model is None:
        raise Stop(1)
    if build is None:
        raise BuildError("cannot read the model files")
    model = result.model
    contexts = held.resolve([c.name for c in model.contexts], declared_deployables(model))
    # the compiler is loaded by now (`compile_model`)
    from loom.lang import render_text

    warnings = render_text(result.diagnostics, result.sources, color=False)
    with collector_paused():
        written = write_cached_build(build, model, warnings, contexts)
    return build.out, "written" if written else "reused (another replica wrote it meanwhile)"
