"""The FastAPI side: app factory, service dependency, and the Loom route class."""

from __future__ import annotations

import gc
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, FastAPI, Request
from sqlalchemy import MetaData, make_url

from loom.runtime.http.api_calls import ApiResource, Apis
from loom.runtime.http.auth import Authenticator, add_bearer_scheme, resolve_auth
from loom.runtime.http.body_limit import resolve_max_body_bytes
from loom.runtime.http.contracts import add_asyncapi_route
from loom.runtime.http.docs_ui import add_docs_pages
from loom.runtime.http.edge import EdgeMiddleware
from loom.runtime.http.health import add_health_routes
from loom.runtime.http.idempotency import resolve_ttl
from loom.runtime.http.metrics import add_metrics_route
from loom.runtime.http.problems import install_problem_handlers
from loom.runtime.http.system_tokens import SystemTokens
from loom.runtime.http.tenants import check_tenanted_auth
from loom.runtime.messaging.broker_config import (
    DEFAULT_SOURCE,
    redelivery_wait,
    transports_from_environment,
)
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.relay import resolve_relay_options
from loom.runtime.messaging.transports.base import Transport
from loom.runtime.service.admin_mount import mount_admin
from loom.runtime.service.route_index import index_routes
from loom.runtime.service.routing import LoomRoute, get_service
from loom.runtime.service.service import Service
from loom.runtime.storage.dberrors import classify
from loom.runtime.storage.engine import in_memory_sqlite
from loom.runtime.storage.pool_metrics import count_pool_waits
from loom.runtime.storage.replicas import start_replica
from loom.runtime.storage.statement_spans import trace_statements
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.environment import env_flag, pool_settings
from loom.runtime.values.errors import StartupRefused
from loom.runtime.values.externs import Externs
from loom.runtime.values.logs import install_default_handler, log_format
from loom.runtime.values.metrics import Metrics
from loom.runtime.values.tracing import tracer_for

if TYPE_CHECKING:
    pass
from loom.runtime.values.schemas import Problem

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./loom.db"
IN_MEMORY_SQLITE = "sqlite+aiosqlite://"  # a service planned, never started: no database needed


def create_app(
    *,
    title: str,
    metadata: MetaData,
    routers: Sequence[APIRouter],
    database_url: str | None = None,
    externs: Mapping[str, Sequence[str]] | None = None,
    extern_module: str | None = None,
    channels: Sequence[Channel] = (),
    event_types: Sequence[type[DomainEvent]] = (),
    subscribe: Callable[[Service], None] | None = None,
    relay: bool | None = None,
    relay_options: Mapping[str, Any] | None = None,
    dead_letter_routes: bool | None = None,
    processes: bool = False,
    scheduler: bool | None = None,
    scheduler_options: Mapping[str, Any] | None = None,
    auth: Authenticator | Literal[False] | None = None,
    max_body_bytes: int | None = None,
    idempotency_ttl: timedelta | float | None = None,
    model_revision: str | None = None,
    asyncapi: Path | None = None,
    console_views: Path | None = None,
    contexts: Sequence[str] | None = None,
    brokers: Mapping[str, Transport] | None = None,
    consumer_options: Mapping[str, Any] | None = None,
    api_resources: Sequence[ApiResource] = (),
    api_urls: Mapping[str, str] | None = None,
    tenanted: Sequence[str] = (),
    instance_answers: Mapping[str, Any] | None = None,
    metrics: bool | None = None,
    metrics_public: bool | None = None,
    tracer_provider: Any = None,
    **fastapi_options: Any,
) -> FastAPI:
    """A FastAPI app with the routers, the problem handlers, the X-Correlation-Id middleware and a
    lifespan that builds the `Service` (URL argument, else LOOM_DATABASE_URL, else ./loom.db),
    creates the schema, wires the events and runs the outbox relay.

    `externs` maps each extern class the model needs to its methods; the lifespan loads them from
    `extern_module` (else LOOM_EXTERN_MODULE) onto `service.externs`, or fails with `ExternError`
    (`app.state.loom_externs.preload()` loads them ahead, as `loom run` does).

    Events: `channels` are the durable channels; `event_types` the event classes to register
    (so the relay can decode them); `subscribe(service)` subscribes the handlers. The relay runs
    when there are channels, unless `relay=False` or LOOM_RELAY=off; `relay_options` go to
    `Relay` (the lease, when they name none, from LOOM_RELAY_LEASE in seconds). The dead-letter admin routes are mounted when there are channels (or when
    `dead_letter_routes` says so).

    Processes (docs/processes.md): `processes=True` creates the process, timer and tick tables
    and mounts the dead-letter routes (dead timeouts are listed there too) and the timer routes
    (`GET /api/admin/timers`, `POST /api/admin/timers/{id}/fire`). The scheduler, which
    fires due timeouts and context-timer ticks, runs when the service uses processes (or
    registered a timeout handler or a context timer in `subscribe`), unless `scheduler=False` or
    LOOM_SCHEDULER=off; `scheduler_options` go to `Scheduler`.

    Authentication (docs/http.md#authentication): `auth` is an `Authenticator` (e.g.
    `JwtAuth.hs256(secret)`), False for none, or None to read LOOM_JWT_SECRET /
    LOOM_JWT_PUBLIC_KEY (+ LOOM_JWT_AUDIENCE, LOOM_JWT_ISSUER). A verified bearer token is the
    request's principal; a token that does not verify is a 401; no token, or no authentication
    configured, is anonymous. With authentication, the admin routes need the role `admin`.
    `tenanted` names the tenanted contexts served (docs/language.md#tenants): they need
    authentication, so without it the app refuses to build (`AuthConfigError`).

    Limits (docs/http.md#limits): `max_body_bytes` (else LOOM_MAX_BODY_BYTES, else 1 MiB) caps a
    request body; a larger one is answered 413 `payload-too-large`. `idempotency_ttl` (a
    timedelta or seconds; else LOOM_IDEMPOTENCY_TTL, else 24 h) is how long an
    `Idempotency-Key` is remembered (docs/http.md#idempotency-keys).

    `model_revision` (the generated `MODEL_REVISION`) is stamped on every event the service
    writes, and logged beside the writer's revision by every consumer (None: "unknown").

    `asyncapi` is the AsyncAPI document (a JSON file; the generated package's `asyncapi.json`)
    served at `GET /asyncapi.json` (docs/http.md#contracts-asyncapi). `console_views` (the
    package's `console.json`) holds the processes' state machines the instance admin route answers
    and the model's diagrams the console's Model screen draws (`model_admin`).

    Deployables (docs/events.md, "Channels on a broker"): `contexts` are the contexts this
    service holds (None: all); `subscribe` subscribes their reactions only. `brokers` maps a
    `channelSource` name ("" for the channels naming none) to its `Transport` (None: the ones
    `LOOM_BROKER_<NAME>` / `LOOM_BROKER` give, `messaging/broker_config.py`, each with the
    LOOM_REDELIVERY_WAIT as its `ack_wait` unless its URL names one); the lifespan
    refuses to start (`StartupRefused`) when a channel must carry an event to or from another
    deployable and has no broker, connects to each broker and runs a durable consumer for each
    local reaction to another deployable's events; `consumer_options` go to `Consumers`.

    API calls (docs/deployables.md, "Calling another context"): `api_resources` are the model's
    `resource { kind: api }` bindings of this service's contexts. A bound context this service
    holds is called in process; another one at the base URL `api_urls` (context -> URL) or
    `LOOM_API_<CONTEXT>` gives, else the lifespan refuses to start (`StartupRefused`).

    `instance_answers` (process -> its generated `<Workflow>InstanceOut`): what an ended episode
    of a process workflow is archived as (`ProcessInstances.next_episode`).

    Observability (docs/observability.md): `GET /healthz` and `GET /readyz` always; `GET /metrics`
    unless `metrics=False` (None: off when LOOM_NO_METRICS is set), needing the role `admin` when
    authentication is configured unless `metrics_public` (None: LOOM_METRICS_PUBLIC). Traces
    (`values/tracing.py`): exported over OTLP/HTTP when LOOM_OTEL_ENDPOINT or the standard
    OTEL_EXPORTER_OTLP_* variables say where; `tracer_provider` (an OpenTelemetry
    `TracerProvider`) is used instead when given. LOOM_DEPLOYABLE names the deployable (the
    `loom.deployable` attribute, and the service's name unless OTEL_SERVICE_NAME gives one).
    """
    ttl = resolve_ttl(idempotency_ttl)
    metrics_on = metrics if metrics is not None else not env_flag("LOOM_NO_METRICS")
    counted = Metrics() if metrics_on else None  # the app's instruments (values/metrics.py)
    deployable = os.environ.get("LOOM_DEPLOYABLE") or None
    tracer = tracer_for(deployable or title, deployable=deployable, provider=tracer_provider)
    extern_plan = Externs(extern_module, externs or {})
    relay_settings = resolve_relay_options(relay_options)
    pool = pool_settings()
    redelivery = redelivery_wait()  # read now: a bad value refuses the build, not the start
    log_format()  # likewise (the lifespan's default handler takes it)
    # the secret of the calls the system makes of other contexts' handlers (and takes in)
    system_tokens = SystemTokens.from_env()
    run_relay = relay if relay is not None else os.environ.get("LOOM_RELAY", "").lower() != "off"
    run_scheduler = (
        scheduler
        if scheduler is not None
        else os.environ.get("LOOM_SCHEDULER", "").lower() != "off"
    )

    def configured(url: str) -> Service:
        """The service on `url`, its events registered (not subscribed: the caller does, inside
        its own clean-up)."""
        transports = (
            brokers
            if brokers is not None
            else transports_from_environment(
                os.environ, {channel.source or DEFAULT_SOURCE for channel in channels}, redelivery
            )
        )
        service = Service.from_url(
            url,
            metadata,
            channels=channels,
            relay_options=relay_settings,
            processes=processes,
            scheduler_options=scheduler_options,
            contexts=contexts,
            brokers=transports,
            consumer_options=consumer_options,
            # an in-memory SQLite database is one connection (a StaticPool): no pool to size
            **({} if in_memory_sqlite(url) else pool),
        )
        service.tenanted = frozenset(tenanted)
        service.tracer = service.events.tracer = tracer
        service.idempotency.ttl = ttl
        if counted is not None:
            service.events.metrics = service.idempotency.metrics = counted
            count_pool_waits(service.engine, counted)
        if tracer is not None and tracer.sql:
            trace_statements(service.engine, tracer)
        service.events.model_revision = model_revision
        for event_type in event_types:
            service.events.register(event_type)
        return service

    def connect(service: Service) -> dict[str, str]:
        """Subscribe the reactions, plan the brokers and find the other deployables' URLs:
        `StartupRefused` when a broker or a URL is missing. Touches no database."""
        if subscribe is not None:
            subscribe(service)
        service.brokers.plan(service.events)
        service.apis = Apis(api_resources, system_tokens)
        service.apis.tracer = tracer
        return service.apis.urls(contexts, api_urls or {}, os.environ)

    async def missing_connections() -> list[str]:
        """What keeps the service from starting for want of a broker (one per channel source that
        must carry events between deployables) or of another deployable's URL (one per context
        called there), a sentence each: `loom run` says them before its banner."""
        service = configured(IN_MEMORY_SQLITE)
        try:
            connect(service)
            return []
        except StartupRefused as exc:
            return list(exc.reasons)
        finally:
            await service.dispose()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        install_default_handler()
        loaded = extern_plan.load()
        url = database_url or os.environ.get("LOOM_DATABASE_URL") or DEFAULT_DATABASE_URL
        service = configured(url)
        service.externs = loaded
        try:
            urls = connect(service)  # before the database: a refusal touches none
            service.instance_answers = dict(instance_answers or {})
            try:
                await service.create_schema()
            except Exception as exc:
                if classify(exc) != "unavailable":
                    raise
                where = make_url(url).render_as_string(hide_password=True)
                raise StartupRefused(
                    f"the service does not start: cannot connect to the database {where}: {exc}"
                ) from None
            app.state.loom = service
            # seen by `loom migrate apply` (storage.replicas); before any background work starts
            replica = await start_replica(service.engine, model_revision)
            try:
                service.apis.start(app, urls)
                if run_relay:
                    await service.start_relay()
                await service.start_brokers()
                if run_scheduler and service.uses_processes:
                    await service.start_scheduler()
                _freeze_start()
                yield
            finally:
                await replica.stop()
        finally:
            await service.dispose()  # stops the scheduler and the relay first
            if tracer is not None:
                tracer.flush()  # the spans of the last requests, before the process ends

    # The generated routes sit on the app's own router, flat, as if declared with `@app.post`:
    # `include_router` nests each router, and every request (every await in it, too) then pays
    # for the nested matching and scope bookkeeping.
    flat = [route for router in routers for route in router.routes]
    # FastAPI's own /docs and /redoc load their scripts from a CDN: ours serve the package's
    docs_url = fastapi_options.pop("docs_url", "/docs")
    redoc_url = fastapi_options.pop("redoc_url", "/redoc")
    # the document's version is the model's revision: a client generated from it names the model
    fastapi_options.setdefault("version", model_revision or "unknown")
    # FastAPI's own OpenTelemetry (its global providers): the service traces itself, to its own
    # provider, with spans named after the model; FastAPI's would double each request's span,
    # and asks OpenTelemetry whether it is configured on every request
    fastapi_options.setdefault("telemetry", {"tracing": False, "metrics": False, "logs": False})
    app = FastAPI(
        title=title,
        lifespan=lifespan,
        routes=flat,
        docs_url=None,
        redoc_url=None,
        **fastapi_options,
    )
    # a request tries only the routes its path can match, not every route before its own
    index_routes(app.router)
    add_docs_pages(app, docs_url, redoc_url)
    add_health_routes(app, _service_or_none)
    if counted is not None:
        public = metrics_public if metrics_public is not None else env_flag("LOOM_METRICS_PUBLIC")
        add_metrics_route(app, counted, _service_or_none, public=public)
    app.state.loom_tracer = tracer  # the routes' spans (`LoomRoute`)
    app.state.loom_externs = extern_plan  # `loom run` preloads them, before its banner
    app.state.loom_missing_connections = missing_connections  # and says these before it too
    authenticator = resolve_auth(auth)
    check_tenanted_auth(tenanted, authenticator)
    app.state.loom_auth = authenticator
    mount_admin(
        app,
        LoomRoute,
        get_service,
        dead_letter_routes=(
            dead_letter_routes if dead_letter_routes is not None else bool(channels) or processes
        ),
        processes=bool(processes),
        console_views=console_views,
    )
    install_problem_handlers(app)
    app.add_middleware(
        EdgeMiddleware,
        max_body_bytes=resolve_max_body_bytes(max_body_bytes),
        authenticator=authenticator,
        system_tokens=system_tokens,
        metrics=counted,
        tracer=tracer,
    )
    _add_problem_schema(app)
    if asyncapi is not None:
        add_asyncapi_route(app, asyncapi)
    if authenticator is not None:
        add_bearer_scheme(app)
    return app


def _service_or_none(request: Request) -> Service | None:
    """The app's service, None before its lifespan started it."""
    service: Service | None = getattr(request.app.state, "loom", None)
    return service


def _add_problem_schema(app: FastAPI) -> None:
    base_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = base_openapi()
        problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        defs = problem.pop("$defs", {})
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        schemas.setdefault("Problem", problem)
        for name, definition in defs.items():
            schemas.setdefault(name, definition)
        _document_idempotency_key(schema)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's way to extend the document


_IDEMPOTENCY_PARAMETER = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "description": "Apply this request at most once: a retry with the same key and request gets "
    "the recorded answer (Idempotent-Replayed: true); see docs/http.md#idempotency-keys.",
    "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$"},
}


def _document_idempotency_key(schema: dict[str, Any]) -> None:
    """Every mutating operation of the document takes the optional Idempotency-Key header."""
    for item in schema.get("paths", {}).values():
        for method, operation in item.items():
            if method.upper() in {"POST", "PUT", "PATCH", "DELETE"}:
                operation.setdefault("parameters", []).append(dict(_IDEMPOTENCY_PARAMETER))


def _freeze_start() -> None:
    """When the process froze what its own start made (`gc.freeze`, as `loom run` does before it
    serves), what the service's start made (its engine, tables, relay, consumers, ...) is frozen
    too: it lives as long as the service, and the collector's full collections, which come every
    few thousand events under load, would otherwise walk all of it each time (a tenth of a
    second each, in a deployable of the broker bench). A process that froze nothing is left as
    it is: the collector is the process's, not the service's."""
    if gc.get_freeze_count():
        gc.freeze()
