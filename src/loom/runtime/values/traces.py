"""Traces, the OpenTelemetry half (docs/observability.md#traces): a service's `Tracer`, which the
layers above call to open their spans and to carry a trace context through the outbox, the
brokers, the timers and API calls. Imported only when the service traces (`values/tracing.py`).

One tracer per service, over its own `TracerProvider` (several services in one process, as in the
tests and an in-process `loom up`, export under their own names); the current span is
OpenTelemetry's, in its context variable, so a span opened anywhere in a request's chain is a child
of the one that was current.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from loom.runtime.values.tracing import DEPLOYABLE, SQL_VARIABLE, join_stored, split_stored

SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL = (
    SpanKind.SERVER,
    SpanKind.CLIENT,
    SpanKind.PRODUCER,
    SpanKind.CONSUMER,
    SpanKind.INTERNAL,
)
_PROPAGATOR = TraceContextTextMapPropagator()
Attributes = Mapping[str, Any]


def exporting_provider(url: str, service_name: str) -> TracerProvider:
    """A provider exporting in batches over OTLP/HTTP (protobuf) to `url`; its resource takes
    OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, and `service_name` when neither names it.
    The sampler is the SDK's: OTEL_TRACES_SAMPLER and its argument, else parent-based always-on."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=url)))
    return provider


def current_span_ids() -> tuple[str, str] | None:
    found = trace.get_current_span().get_span_context()
    if not found.is_valid:
        return None
    return format(found.trace_id, "032x"), format(found.span_id, "016x")


class Tracer:
    """A service's spans. `owned`: the provider is the service's, flushed and shut down with it."""

    def __init__(self, provider: Any, *, deployable: str | None, owned: bool) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("loom.runtime")
        self._owned = owned
        self._base: dict[str, Any] = {DEPLOYABLE: deployable} if deployable else {}
        # a span per database statement (`storage/engine.py` hooks it in)
        self.sql = os.environ.get(SQL_VARIABLE, "").strip().lower() in ("1", "true", "yes")

    # -- spans --------------------------------------------------------------------------------
    def start(
        self,
        name: str,
        kind: SpanKind = INTERNAL,
        attributes: Attributes | None = None,
        *,
        parent: Any = None,
        links: Sequence[Link] = (),
    ) -> Span:
        """A span, started but not current. `parent`: an OpenTelemetry context (`extract`,
        `parent_of`); None: the current span's."""
        given = {**self._base, **attributes} if attributes else self._base
        span: Span = self._tracer.start_span(
            name, context=parent, kind=kind, attributes=given, links=links
        )
        return span

    @contextmanager
    def span(
        self,
        name: str,
        kind: SpanKind = INTERNAL,
        attributes: Attributes | None = None,
        *,
        parent: Any = None,
        links: Sequence[Link] = (),
    ) -> Iterator[Span]:
        """`start`, current for the block; an exception escaping it is recorded and the span's
        status set to error."""
        span = self.start(name, kind, attributes, parent=parent, links=links)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield span
        except BaseException as exc:
            failed(span, exc)
            raise
        finally:
            otel_context.detach(token)
            span.end()

    def enter(self, span: Span) -> object:
        """Make `span` current until `leave(token)` (for a span opened and closed apart)."""
        return otel_context.attach(trace.set_span_in_context(span))

    @staticmethod
    def leave(token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    # -- trace context --------------------------------------------------------------------------
    @staticmethod
    def stored() -> str | None:
        """The current span's context, as an outbox row or a timeout stores it (None: none)."""
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier)
        return join_stored(carrier)

    @staticmethod
    def inject(headers: dict[str, str]) -> None:
        """Add the current span's `traceparent` (and `tracestate`) to `headers`."""
        _PROPAGATOR.inject(headers)

    @staticmethod
    def extract(carrier: Mapping[str, str]) -> Any:
        """The context a received `traceparent` names, as a parent (an empty one: a new trace)."""
        return _PROPAGATOR.extract(carrier, context=otel_context.Context())

    @staticmethod
    def parent_of(stored: str | None) -> Any:
        """The context a stored trace context names, as a parent (an empty one: a new trace)."""
        return _PROPAGATOR.extract(split_stored(stored), context=otel_context.Context())

    @staticmethod
    def link_to(stored: str | None) -> list[Link]:
        """A link to the span a stored context names (none when it names none)."""
        found = trace.get_current_span(Tracer.parent_of(stored)).get_span_context()
        return [Link(found)] if found.is_valid else []

    # -- the service's end ----------------------------------------------------------------------
    def flush(self) -> None:
        self.provider.force_flush()

    def shutdown(self) -> None:
        """Export what is left (when the provider is the service's) and stop."""
        if self._owned:
            self.provider.shutdown()


def failed(span: Span, exc: BaseException) -> None:
    """Record `exc` on `span` and mark it failed."""
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def event(name: str, attributes: Attributes | None = None) -> None:
    """An event on the current span (a redelivery, an inbox skip, a retry, a dead letter)."""
    trace.get_current_span().add_event(name, attributes=attributes)


def provider_for_tests() -> tuple[TracerProvider, Any]:
    """A provider recording spans in memory, and its exporter (`get_finished_spans()`)."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter
