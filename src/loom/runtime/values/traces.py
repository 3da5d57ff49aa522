"""Traces, the OpenTelemetry half (docs/observability.md#traces): a service's `Tracer`, which the
layers above call to open their spans and to carry a trace context through the outbox, the
brokers, the timers and API calls. Imported only when the service traces (`values/tracing.py`).

One tracer per service, over its own `TracerProvider` (several services in one process, as in the
tests and an in-process `loom up`, export under their own names); the current span is
OpenTelemetry's, in its context variable, so a span opened anywhere in a request's chain is a child
of the one that was current.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from loom.model.telemetry import (
    CORRELATION_ID,
    DEPLOYABLE,
    EVENT,
    ISOLATION,
    PROCESS,
    REACTOR,
    TENANT,
    TIMEOUT,
    TIMER,
    UNIT_OF_WORK,
)
from loom.runtime.values.trace_context import SQL_VARIABLE, join_stored, redriven, split_stored

SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL = (
    SpanKind.SERVER,
    SpanKind.CLIENT,
    SpanKind.PRODUCER,
    SpanKind.CONSUMER,
    SpanKind.INTERNAL,
)
_PROPAGATOR = TraceContextTextMapPropagator()
# the isolation a transaction gets when its unit of work names none
_DEFAULT_ISOLATION = {"postgresql": "read committed", "sqlite": "serializable"}
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

    SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL = SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL

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
            recorded(span, exc, True)
            raise
        finally:
            otel_context.detach(token)
            span.end()

    # -- messages -------------------------------------------------------------------------------
    def sends(self, system: str, messages: list[Any]) -> list[Span]:
        """A `send <channel>` PRODUCER span per message, a child of the trace context its outbox
        row stored (the span that raised the event), and each message given the span's own
        context to carry: the consumer's `process` span is its child, in the same trace."""
        spans = []
        for index, message in enumerate(messages):
            span = self.start(
                f"send {message.channel}",
                PRODUCER,
                {
                    **_message_attributes(system, message, "send"),
                    CORRELATION_ID: message.correlation_id,
                },
                **self.origin(message.trace_context),
            )
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
            messages[index] = dataclasses.replace(message, trace_context=join_stored(carrier))
            spans.append(span)
        return spans

    @staticmethod
    def sent(spans: Sequence[Span], acked: Sequence[bool]) -> None:
        """End the `send` spans: failed for a message the broker did not take."""
        for index, span in enumerate(spans):
            if index >= len(acked) or not acked[index]:
                span.set_status(Status(StatusCode.ERROR, "the broker did not take the message"))
            span.end()

    def process(self, system: str, message: Any, consumer: str | None = None) -> Any:
        """The `process <channel>` CONSUMER span of one delivery of a stored event (an outbox
        row, a broker message), a child of the context it carries (a new trace without one)."""
        attributes = {
            **_message_attributes(system, message, "process"),
            CORRELATION_ID: message.correlation_id,
        }
        if consumer is not None:
            attributes["messaging.consumer.group.name"] = consumer
        if message.tenant:
            attributes[TENANT] = message.tenant
        return self.span(
            f"process {message.channel}", CONSUMER, attributes, **self.origin(message.trace_context)
        )

    def reaction(self, name: str, event_type: str) -> tuple[Span, object]:
        """The span of one reactor's run for one event, current until `close`."""
        span = self.start(name, INTERNAL, {REACTOR: name, EVENT: event_type})
        return span, self.enter(span)

    @staticmethod
    def event(name: str, attributes: Attributes | None = None) -> None:
        """An event on the current span (a redelivery, an inbox skip, a retry, a dead letter)."""
        trace.get_current_span().add_event(name, attributes=attributes)

    # -- statements (LOOM_OTEL_SQL) ----------------------------------------------------------------
    def statement(self, system: str, text: str) -> Span | None:
        """The span of one database statement inside a recorded span (None outside one)."""
        if not trace.get_current_span().is_recording():
            return None
        operation = text.lstrip().split(None, 1)[0].upper() if text.strip() else ""
        attributes = {
            "db.system.name": system,
            "db.query.text": text,
            "db.operation.name": operation,
        }
        return self.start(operation or "statement", CLIENT, attributes)

    @staticmethod
    def statement_failed(span: Span, exc: BaseException) -> None:
        recorded(span, exc, True)
        span.end()

    # -- timeouts and timers ----------------------------------------------------------------------
    def fired(self, name: str, stored: str | None, due: Any) -> AbstractContextManager[Span]:
        """The span of a fired timeout: the root of a new trace (it runs days later, not as part
        of the request that armed it), linked to the span that armed it."""
        attributes = {PROCESS: due.process, TIMEOUT: due.name, CORRELATION_ID: due.correlation_id}
        if due.tenant is not None:
            attributes[TENANT] = due.tenant
        attributes["loom.attempt"] = due.attempt
        return self.span(
            name, INTERNAL, attributes, parent=otel_context.Context(), links=self.link_to(stored)
        )

    def ticked(self, timer: str) -> AbstractContextManager[Span]:
        """The span of a context timer's tick: the root of a new trace."""
        return self.span(f"timer {timer}", INTERNAL, {TIMER: timer}, parent=otel_context.Context())

    # -- units of work ----------------------------------------------------------------------------
    def unit_of_work(
        self, kind: str, dialect: str, isolation: str | None
    ) -> tuple[Span, object] | None:
        """The span of a unit of work (`transaction`, `autocommit`, `reaction`), made current;
        None outside any span: the relay's and the scheduler's own bookkeeping starts no trace."""
        if not trace.get_current_span().is_recording():
            return None
        attributes = {"db.system.name": dialect, UNIT_OF_WORK: kind}
        if isolation is not None:
            attributes[ISOLATION] = isolation
        span = self.start(kind, INTERNAL, attributes)
        return span, self.enter(span)

    @staticmethod
    def ended_with(unit: tuple[Span, object], exc: BaseException | None) -> None:
        """The unit of work (or reaction) ended with `exc` (None: it went through): a refusal of
        the model's (a 4xx `LoomError`) is noted, anything else fails the span."""
        if exc is not None:
            failure = getattr(exc, "traced_as_failure", getattr(exc, "status", 500) >= 500)
            recorded(unit[0], exc, failure)

    @staticmethod
    def close(unit: tuple[Span, object]) -> None:
        span, token = unit
        otel_context.detach(token)  # type: ignore[arg-type]
        span.end()

    def commit_span(
        self, unit: tuple[Span, object], dialect: str, isolation: str | None
    ) -> AbstractContextManager[Span]:
        """The span of a unit of work's COMMIT, with its isolation level."""
        attributes = {
            "db.system.name": dialect,
            "db.operation.name": "COMMIT",
            ISOLATION: isolation or _DEFAULT_ISOLATION.get(dialect, "default"),
        }
        return self.span("COMMIT", CLIENT, attributes)

    def enter(self, span: Span) -> object:
        """Make `span` current until `leave(token)` (for a span opened and closed apart)."""
        return otel_context.attach(trace.set_span_in_context(span))

    @staticmethod
    def leave(token: object) -> None:
        otel_context.detach(token)  # type: ignore[arg-type]

    # -- HTTP answers -----------------------------------------------------------------------------
    @staticmethod
    def answered(span: Span, status: int) -> None:
        """An HTTP exchange's span ends with `status`: failed when it is a 5xx."""
        if status >= 500:
            span.set_status(Status(StatusCode.ERROR))
            span.set_attribute("error.type", str(status))

    @staticmethod
    def refused(span: Span, exc: BaseException, status: int) -> None:
        """`exc` was answered with `status`: recorded on `span`, which failed when the service
        did (5xx), not when it refused a client's request."""
        recorded(span, exc, status >= 500)

    # -- trace context ----------------------------------------------------------------------------
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
    def origin(stored: str | None) -> dict[str, Any]:
        """The `parent` and `links` of the span handling a stored event: a child of the span
        that raised it, or for a redriven event the root of a new trace linked to that span."""
        again, stored = redriven(stored)
        if again:
            return {"parent": otel_context.Context(), "links": Tracer.link_to(stored)}
        return {"parent": Tracer.parent_of(stored)}

    @staticmethod
    def link_to(stored: str | None) -> list[Link]:
        """A link to the span a stored context names (none when it names none)."""
        found = trace.get_current_span(Tracer.parent_of(stored)).get_span_context()
        return [Link(found)] if found.is_valid else []

    # -- the service's end ------------------------------------------------------------------------
    def flush(self) -> None:
        self.provider.force_flush()

    def shutdown(self) -> None:
        """Export what is left (when the provider is the service's) and stop."""
        if self._owned:
            self.provider.shutdown()


def _message_attributes(system: str, message: Any, operation: str) -> dict[str, Any]:
    return {
        "messaging.system": system,
        "messaging.destination.name": message.channel,
        "messaging.operation.type": operation,
        "messaging.message.id": str(message.event_id),
        EVENT: message.event_type,
    }


def recorded(span: Span, exc: BaseException, failure: bool) -> None:
    """Record `exc` on `span` (an event and `error.type`); the span failed when it is a `failure`
    (a refusal of the model's, a 4xx, is none)."""
    span.record_exception(exc)
    span.set_attribute("error.type", type(exc).__name__)
    if failure:
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
