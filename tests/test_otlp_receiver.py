"""The tests' OTLP/HTTP receiver (tests/otlp.py) against the OpenTelemetry SDK's own exporter: what
it keeps of each span is what the SDK sent, gzip or not, and a body that is no export request is
refused with a 400, not kept."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link, SpanKind

from tests.otlp import receiving


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_the_receiver_keeps_what_the_sdk_exported(compression: Compression) -> None:
    with receiving() as receiver:
        exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces", compression=compression)
        provider = TracerProvider(resource=Resource.create({"service.name": "Orders"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("earlier") as earlier:
            pass
        with tracer.start_as_current_span("POST /x", kind=SpanKind.SERVER) as root:
            root.set_attribute("http.response.status_code", 200)
            with tracer.start_as_current_span(
                "process Orders.Fulfilment",
                kind=SpanKind.CONSUMER,
                links=[Link(earlier.get_span_context())],
                attributes={"loom.deployable": "Orders", "tags": ["a", "b"], "ratio": 0.5},
            ) as child:
                child.add_event("redelivered", {"messaging.delivery.attempt": 2})
        provider.shutdown()
        spans = {s.name: s for s in receiver.spans}
        assert receiver.refused == 0
    server, consumer = spans["POST /x"], spans["process Orders.Fulfilment"]
    assert (server.kind, server.parent_id, server.service) == ("SERVER", None, "Orders")
    assert server.attributes == {"http.response.status_code": 200}
    assert consumer.kind == "CONSUMER"
    assert (consumer.trace_id, consumer.parent_id) == (server.trace_id, server.span_id)
    assert consumer.attributes == {"loom.deployable": "Orders", "tags": ["a", "b"], "ratio": 0.5}
    assert consumer.links == ((spans["earlier"].trace_id, spans["earlier"].span_id),)
    assert [(e.name, e.attributes) for e in consumer.events] == [
        ("redelivered", {"messaging.delivery.attempt": 2})
    ]
    assert receiver.orphans() == []
    assert receiver.tree(server.trace_id).splitlines() == [
        "POST /x [SERVER @Orders]",
        "  process Orders.Fulfilment [CONSUMER @Orders] ['redelivered']",
    ]


def test_a_body_that_is_no_export_request_is_refused() -> None:
    with receiving() as receiver:
        request = urllib.request.Request(
            f"{receiver.url}/v1/traces",
            data=b"\xff\xff not protobuf",
            headers={"Content-Type": "application/x-protobuf"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 400
        assert (receiver.refused, receiver.spans) == (1, [])
