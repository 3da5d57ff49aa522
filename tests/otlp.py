"""An OTLP/HTTP trace receiver the end-to-end trace tests run: what a collector (Jaeger, Tempo, an
OpenTelemetry Collector) takes from `loom run --otel-endpoint URL`, kept in memory.

It listens on a free loopback port in a thread of its own, takes `POST /v1/traces` bodies in
`application/x-protobuf` (gzip or not), decodes them with `opentelemetry-proto`'s
`ExportTraceServiceRequest`, and keeps every span with what the tests assert on: its ids, its
parent, name, kind, attributes, links, events and its resource's `service.name`. A test waits for
a condition on the spans (`until`, polled with a deadline), never for a fixed time.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from google.protobuf.message import DecodeError  # type: ignore[import-untyped]  # no stubs here
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from tests.waiting import until, wait_until

T = TypeVar("T")
TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class Event:
    name: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Span:
    """One received span; ids in lower-case hex, as in `traceparent`."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str  # SERVER, CLIENT, PRODUCER, CONSUMER, INTERNAL
    attributes: dict[str, Any]
    service: str  # the resource's service.name
    links: tuple[tuple[str, str], ...] = ()  # (trace id, span id)
    events: tuple[Event, ...] = field(default=())
    start: int = 0  # ns since the epoch

    def event_names(self) -> list[str]:
        return [e.name for e in self.events]


def _value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return _attributes(v.kvlist_value.values)
    return getattr(v, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs if isinstance(kv, KeyValue)}


def _kind(span: ProtoSpan) -> str:
    return ProtoSpan.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_")


def decode(body: bytes) -> list[Span]:
    """The spans of one `ExportTraceServiceRequest` body (DecodeError when it is not one)."""
    request = ExportTraceServiceRequest.FromString(body)
    found: list[Span] = []
    for resource_spans in request.resource_spans:
        service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                found.append(
                    Span(
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_id=s.parent_span_id.hex() or None,
                        name=s.name,
                        kind=_kind(s),
                        attributes=_attributes(s.attributes),
                        service=service,
                        links=tuple((lk.trace_id.hex(), lk.span_id.hex()) for lk in s.links),
                        events=tuple(Event(e.name, _attributes(e.attributes)) for e in s.events),
                        start=s.start_time_unix_nano,
                    )
                )
    return found


class Receiver:
    """The spans received so far, and the views the tests assert on."""

    def __init__(self) -> None:
        self._spans: list[Span] = []
        self._lock = threading.Lock()
        self.requests = 0
        self.refused = 0  # bodies that were not an ExportTraceServiceRequest
        self.url = ""  # the base URL, for --otel-endpoint (set by `receiving`)

    def take(self, spans: list[Span]) -> None:
        with self._lock:
            self._spans.extend(spans)
            self.requests += 1

    @property
    def spans(self) -> list[Span]:
        with self._lock:
            return list(self._spans)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()

    def traces(self) -> dict[str, list[Span]]:
        by: dict[str, list[Span]] = defaultdict(list)
        for span in self.spans:
            by[span.trace_id].append(span)
        return dict(by)

    def trace_of(self, span: Span) -> list[Span]:
        return [s for s in self.spans if s.trace_id == span.trace_id]

    def orphans(self, spans: list[Span] | None = None) -> list[Span]:
        """The spans whose parent was never received (a broken trace)."""
        spans = self.spans if spans is None else spans
        ids = {s.span_id for s in spans}
        return [s for s in spans if s.parent_id is not None and s.parent_id not in ids]

    def tree(self, trace_id: str) -> str:
        """The trace as an indented outline, each span with its kind and service (printed by the
        tests, for the reader of a failure)."""
        spans = [s for s in self.spans if s.trace_id == trace_id]
        ids = {s.span_id for s in spans}
        children: dict[str | None, list[Span]] = defaultdict(list)
        for span in spans:
            children[span.parent_id if span.parent_id in ids else None].append(span)
        lines: list[str] = []

        def walk(parent: str | None, depth: int) -> None:
            for span in sorted(children[parent], key=lambda s: s.start):
                notes = f" {span.event_names()}" if span.events else ""
                lines.append(f"{'  ' * depth}{span.name} [{span.kind} @{span.service}]{notes}")
                walk(span.span_id, depth + 1)

        walk(None, 0)
        return "\n".join(lines)

    async def until(
        self, condition: Callable[[list[Span]], T | None], *, timeout: float, what: str
    ) -> T:
        """Poll `condition` over the spans received so far until it answers something truthy
        (answered), failing after `timeout` seconds with `what` and the spans' names."""
        try:
            return await until(lambda: condition(self.spans), timeout=timeout, what=what)
        except AssertionError as exc:
            raise self._failed(exc) from None

    def wait(self, condition: Callable[[list[Span]], T | None], *, timeout: float, what: str) -> T:
        """`until` for a test off the event loop."""
        try:
            return wait_until(lambda: condition(self.spans), timeout=timeout, what=what)
        except AssertionError as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: AssertionError) -> AssertionError:
        names = sorted({s.name for s in self.spans})
        return AssertionError(f"{exc}\nreceived {len(self.spans)} spans: {names}")


def subscribed_in(documents: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """event type -> the consumers subscribed to it, by the `x-loom-consumers` of the AsyncAPI
    documents the deployables serve: the model's subscriptions, as each process runs them."""
    found: dict[str, set[str]] = defaultdict(set)
    for document in documents:
        for operation in document.get("operations", {}).values():
            for consumer in operation.get("x-loom-consumers", ()):
                found[consumer["message"]].add(consumer["name"])
    return dict(found)


def missing_reactions(
    trace: list[Span], events: Iterable[str], subscribed: Mapping[str, set[str]]
) -> set[tuple[str, str]]:
    """(event, consumer) for each consumer `subscribed` to one of `events` that did not run, in
    this trace, in a reactor span under a `process` span of that event: a trace complete by the
    model answers the empty set."""
    by_id = {s.span_id: s for s in trace}

    def under_process_of(span: Span, event: str) -> bool:
        parent = by_id.get(span.parent_id or "")
        while parent is not None:
            if parent.kind == "CONSUMER" and parent.attributes.get("loom.event") == event:
                return True
            parent = by_id.get(parent.parent_id or "")
        return False

    ran = {
        (s.attributes["loom.event"], s.attributes["loom.reactor"])
        for s in trace
        if "loom.reactor" in s.attributes and under_process_of(s, s.attributes["loom.event"])
    }
    wanted = {(e, c) for e in events for c in subscribed.get(e, ())}
    return wanted - ran


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            try:
                if self.path != TRACES_PATH:
                    return self._answer(404, b"")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                spans = decode(body)
            except (DecodeError, OSError, zlib.error):
                receiver.refused += 1
                return self._answer(400, b"")
            receiver.take(spans)
            self._answer(200, ExportTraceServiceResponse().SerializeToString())

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a line per export would bury the test's output

    return Handler


@contextmanager
def receiving() -> Iterator[Receiver]:
    """A receiver listening on a free loopback port for the block; its `url` is the base URL to
    give `--otel-endpoint` (the exporter adds /v1/traces)."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="otlp-receiver", daemon=True
    )
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
