"""Traces, the light half (docs/observability.md#traces): whether a service traces, the names of
its spans' attributes, the stored form of a trace context, and the ids a log line carries.

Tracing is off unless configured: `loom run --otel-endpoint URL` (LOOM_OTEL_ENDPOINT), or the
standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, unless
OTEL_TRACES_EXPORTER or OTEL_SDK_DISABLED turns it off. Off, nothing imports OpenTelemetry
(`values/traces.py` does, and only this module's `tracer_for` imports it) and every hook in the
layers above is one `is None` test on the service's tracer.

A trace context is stored (with an outbox row, an armed timeout) as its W3C `traceparent`, then,
when there is one, a newline and its `tracestate`: a newline is the one separator neither header
may hold.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
SQL_VARIABLE = "LOOM_OTEL_SQL"

# the model's attributes, beside OpenTelemetry's semantic conventions
CONTEXT = "loom.context"
AGGREGATE = "loom.aggregate"
OPERATION = "loom.operation"
WORKFLOW = "loom.workflow"
HANDLER = "loom.handler"
PROJECTION = "loom.projection"
EVENT = "loom.event"
REACTOR = "loom.reactor"
PROCESS = "loom.process"
TIMEOUT = "loom.timeout"
DEPLOYABLE = "loom.deployable"
TENANT = "loom.tenant"
CORRELATION_ID = "loom.correlation_id"

# a tracer was made in this process: only then can a span be current (`current_ids`)
_made = False


def traces_endpoint(given: str | None = None) -> str | None:
    """The URL spans are exported to, or None: not tracing. `given` (`--otel-endpoint`) and
    OTEL_EXPORTER_OTLP_ENDPOINT are base URLs (`/v1/traces` is added);
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the whole URL."""
    env = os.environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() == "none":
        return None
    given = given or env.get("LOOM_OTEL_ENDPOINT") or None
    if given:
        return _traces_url(given)
    whole = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if whole:
        return whole
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return _traces_url(base) if base else None


def _traces_url(base: str) -> str:
    return base.rstrip("/") + "/v1/traces"


def tracer_for(
    service_name: str,
    *,
    deployable: str | None = None,
    endpoint: str | None = None,
    provider: Any = None,
) -> Tracer | None:
    """The service's tracer, or None when it does not trace. `provider`: an OpenTelemetry
    `TracerProvider` the caller configured (a test's in-memory exporter, an app's own set-up),
    used as it is and not shut down with the service; otherwise one exporting over OTLP/HTTP to
    `traces_endpoint(endpoint)`, named `service_name` unless OTEL_SERVICE_NAME says otherwise."""
    global _made
    url = None
    if provider is None:
        url = traces_endpoint(endpoint)
        if url is None:
            return None
    from loom.runtime.values.traces import Tracer, exporting_provider

    _made = True
    if provider is not None:
        return Tracer(provider, deployable=deployable, owned=False)
    assert url is not None
    return Tracer(exporting_provider(url, service_name), deployable=deployable, owned=True)


def current_ids() -> tuple[str, str] | None:
    """The (trace id, span id) of the current span, in hex, for a log line; None outside a
    recorded span (and always when nothing in the process traces)."""
    if not _made:
        return None
    from loom.runtime.values.traces import current_span_ids

    return current_span_ids()


def split_stored(stored: str | None) -> dict[str, str]:
    """The carrier (`traceparent`, `tracestate`) of a stored trace context (empty for None)."""
    if not stored:
        return {}
    parent, _, state = stored.partition("\n")
    return {TRACEPARENT: parent, TRACESTATE: state} if state else {TRACEPARENT: parent}


def join_stored(carrier: dict[str, str]) -> str | None:
    """The stored form of a carrier `split_stored` reads back (None when it has no parent)."""
    parent = carrier.get(TRACEPARENT)
    if not parent:
        return None
    state = carrier.get(TRACESTATE)
    return f"{parent}\n{state}" if state else parent
