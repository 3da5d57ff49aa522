"""Recorded spans for the trace tests: an OpenTelemetry SDK provider exporting to memory, and the
views of its spans the tests assert on (by trace, as a tree, orphans)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recorder:
    """A provider for `serve(tracer_provider=...)`, and what it recorded."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    @property
    def spans(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()

    def clear(self) -> None:
        self.exporter.clear()

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, (name, sorted(s.name for s in self.spans))
        return found[0]

    def traces(self) -> dict[int, list[ReadableSpan]]:
        by: dict[int, list[ReadableSpan]] = defaultdict(list)
        for span in self.spans:
            assert span.context is not None
            by[span.context.trace_id].append(span)
        return dict(by)

    def orphans(self) -> list[str]:
        """The spans whose parent was never recorded (a broken trace)."""
        ids = {s.context.span_id for s in self.spans if s.context is not None}
        return [s.name for s in self.spans if s.parent is not None and s.parent.span_id not in ids]

    def tree(self, trace_id: int) -> str:
        """The trace as an indented outline (printed by the tests, for the reader of a failure)."""
        spans = self.traces()[trace_id]
        children: dict[int | None, list[ReadableSpan]] = defaultdict(list)
        ids = {s.context.span_id for s in spans if s.context is not None}
        for span in spans:
            parent = span.parent.span_id if span.parent is not None else None
            children[parent if parent in ids else None].append(span)
        lines: list[str] = []

        def walk(parent: int | None, depth: int) -> None:
            for span in sorted(children[parent], key=lambda s: s.start_time or 0):
                assert span.context is not None
                lines.append(f"{'  ' * depth}{span.name} [{span.kind.name}]")
                walk(span.context.span_id, depth + 1)

        walk(None, 0)
        return "\n".join(lines)


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_of(span: ReadableSpan, spans: Sequence[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next(
        (s for s in spans if s.context is not None and s.context.span_id == span.parent.span_id),
        None,
    )
