"""Traces, the light half (docs/observability.md#traces): whether a service traces, its tracer made
when it does, the current span's context (for an outbox row, a timeout, a log line).

Tracing is off unless configured: `loom run --otel-endpoint URL` (LOOM_OTEL_ENDPOINT), or the
standard OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, unless
OTEL_TRACES_EXPORTER or OTEL_SDK_DISABLED turns it off. Off, the OpenTelemetry SDK is never
imported (`values/traces.py` imports it, and only this module's `tracer_for` imports that) and
every hook in the layers above is one `is None` test on the service's tracer.

The stored form of a trace context is `values/trace_context.py`'s; the attributes' names are
`loom.model.telemetry`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer

# bound when the first tracer of the process is made (`tracer_for`): until then no span can be
# current, and these answer None without importing OpenTelemetry
_ids: Callable[[], tuple[str, str] | None] | None = None
_stored: Callable[[], str | None] | None = None
_event: Callable[[str, dict[str, Any] | None], None] | None = None
# the provider of the apps built inside `providing(...)` (the test kit's `serve(tracer_provider=)`)
_provided: Any = None


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
    global _ids, _stored, _event
    url = None
    provider = provider if provider is not None else _provided
    if provider is None:
        url = traces_endpoint(endpoint)
        if url is None:
            return None
    from loom.runtime.values.traces import Tracer, current_span_ids, exporting_provider

    _ids, _stored, _event = current_span_ids, Tracer.stored, Tracer.event
    if provider is not None:
        return Tracer(provider, deployable=deployable, owned=False)
    assert url is not None
    return Tracer(exporting_provider(url, service_name), deployable=deployable, owned=True)


@contextmanager
def providing(provider: Any) -> Iterator[None]:
    """Apps built in this block trace to `provider` (an OpenTelemetry `TracerProvider`) when
    their `create_app` is given none: how a generated `build_app`, which takes only a URL, is
    traced to a test's in-memory exporter."""
    global _provided
    before, _provided = _provided, provider
    try:
        yield
    finally:
        _provided = before


def current_ids() -> tuple[str, str] | None:
    """The (trace id, span id) of the current span, in hex, for a log line; None outside a
    recorded span (and always when nothing in the process traces)."""
    return None if _ids is None else _ids()


def current_stored() -> str | None:
    """The current span's trace context in its stored form (None outside a span, and always when
    nothing in the process traces): what an outbox row or an armed timeout keeps."""
    return None if _stored is None else _stored()


def note(name: str, attributes: dict[str, Any] | None = None) -> None:
    """An event on the current span (a retry, a dead letter), when one is being recorded."""
    if _event is not None:
        _event(name, attributes)
