"""The shapes of the log lines (docs/observability.md#logs): a JSON line written inside a span
carries the span's trace and span ids (with a real OpenTelemetry SDK provider, the spans read
back from its in-memory exporter), none outside one; the text layout (`--log-format text`) is one
readable line, coloured only on a terminal without NO_COLOR; the default handler writes the layout
LOOM_LOG_FORMAT asks for on stderr, and a bad one is refused."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from loom.runtime.values.log_text import TextLines, wants_colour
from loom.runtime.values.logs import _ENCODE, _line_encoder, _plain, log_fact, log_format
from loom.runtime.values.tracing import tracer_for

DELIVERED = {
    "handler": "Shop.Fulfil.start",
    "event_type": "Shop.OrderPlaced",
    "event_id": "01a22a3c-ebd9-75c4-9743-759464d9c370",
    "correlation_id": "checkout-42",
    "causation_id": None,
    "attempt": 1,
    "channel": "shop",
}
CLOCK = r"\d\d:\d\d:\d\d\.\d{3}"


@pytest.fixture
def exported() -> Iterator[tuple[Any, InMemorySpanExporter]]:
    """A tracer over a real SDK provider, and the exporter its finished spans go to."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tracer_for("shop", provider=provider)
    assert tracer is not None
    yield tracer, exporter
    provider.shutdown()


@pytest.fixture
def written() -> Iterator[tuple[io.StringIO, logging.Handler]]:
    """What `loom.events` writes, through a handler of its own (its formatter set by the test)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("loom.events")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield out, handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _ids(span: Any) -> tuple[str, str]:
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def test_a_json_line_lists_the_known_members_in_their_order_then_the_others_as_given(
    written: tuple[io.StringIO, logging.Handler],
) -> None:
    out, handler = written
    handler.setFormatter(logging.Formatter("%(funcName)s %(message)s"))
    fields = {"key": "k1", "attempt": 2, "event": "ignored", "handler": "Shop.Fulfil.start"}
    for _ in range(2):  # the second line of one shape reads like the first
        log_fact("retry_scheduled", logging.WARNING, {**fields, "level": "ignored"})
    log_fact("consumer_crashed", logging.ERROR, {})
    lines = out.getvalue().splitlines()
    assert lines[0] == lines[1]
    caller, text = lines[0].split(" ", 1)
    assert caller == "log_fact"
    assert list(json.loads(text).items()) == [
        ("event", "retry_scheduled"),
        ("level", "warning"),
        ("handler", "Shop.Fulfil.start"),
        ("attempt", 2),
        ("key", "k1"),
    ]
    assert json.loads(lines[2].split(" ", 1)[1]) == {"event": "consumer_crashed", "level": "error"}


def test_members_given_in_the_line_s_order_are_written_in_it(
    written: tuple[io.StringIO, logging.Handler],
) -> None:
    out, _ = written
    for _ in range(2):
        log_fact("event_handled", logging.INFO, DELIVERED)
    lines = out.getvalue().splitlines()
    assert lines[0] == lines[1]
    assert list(json.loads(lines[0]).items()) == [
        ("event", "event_handled"),
        ("level", "info"),
        *DELIVERED.items(),
    ]


# what a line's members may hold: text of every kind (quotes, controls, beyond ASCII), numbers
# (NaN among them), truth values, None, times and other objects written as text, and lists and
# objects of those
_SCALARS = st.one_of(
    st.text(),
    st.integers(),
    st.floats(),
    st.booleans(),
    st.none(),
    st.datetimes(),
    st.uuids(),
    st.decimals(allow_nan=False),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(st.dictionaries(st.text(), _VALUES, max_size=8))
def test_a_line_is_the_json_text_the_standard_encoder_writes(line: dict[str, Any]) -> None:
    assert getattr(_ENCODE, "__func__", None) is None  # the C encoder made once, not the method
    assert _ENCODE(line) == json.JSONEncoder(default=_plain, ensure_ascii=False).encode(line)


def _refusing(*_args: object) -> object:
    raise TypeError("another signature")


def _writing_otherwise(*_args: object) -> object:
    return lambda line, _level: ["{}"]


@pytest.mark.parametrize(
    "make", [None, _refusing, _writing_otherwise], ids=["missing", "refusing", "other-text"]
)
def test_without_a_c_encoder_that_writes_the_same_text_lines_go_through_the_standard_method(
    make: object,
) -> None:
    encode = _line_encoder(make)
    assert getattr(encode, "__func__", None) is json.JSONEncoder.encode
    assert encode({"event": "x", "n": 1}) == '{"event": "x", "n": 1}'


def test_a_json_line_inside_a_span_carries_its_trace_and_span_ids(
    exported: tuple[Any, InMemorySpanExporter], written: tuple[io.StringIO, logging.Handler]
) -> None:
    tracer, exporter = exported
    out, _ = written
    log_fact("event_dispatched", logging.INFO, {"event_type": "Shop.OrderPlaced"})
    with tracer.span("POST /api/orders"):
        log_fact("event_dispatched", logging.INFO, DELIVERED)
        with tracer.span("Shop.Fulfil.start"):
            log_fact("event_handled", logging.INFO, DELIVERED)
    log_fact("event_handled", logging.INFO, {"event_type": "Shop.OrderPlaced"})
    before, outer, inner, after = (json.loads(x) for x in out.getvalue().splitlines())
    spans = {s.name: s for s in exporter.get_finished_spans()}
    request, reaction = spans["POST /api/orders"], spans["Shop.Fulfil.start"]
    print(f"outer {outer['trace_id']}/{outer['span_id']}, inner {inner['span_id']}")
    assert (outer["trace_id"], outer["span_id"]) == _ids(request)
    assert (inner["trace_id"], inner["span_id"]) == _ids(reaction)
    assert inner["trace_id"] == outer["trace_id"] and inner["span_id"] != outer["span_id"]
    # the ids come last, after the fact's own members, in their order
    assert list(outer) == ["event", "level", *DELIVERED, "trace_id", "span_id"]
    for line in (before, after):  # no span current: no ids
        assert "trace_id" not in line and "span_id" not in line, line


def test_the_text_layout_is_one_readable_line_with_the_trace_id(
    exported: tuple[Any, InMemorySpanExporter], written: tuple[io.StringIO, logging.Handler]
) -> None:
    tracer, _ = exported
    out, handler = written
    handler.setFormatter(TextLines(colour=False))
    failed = {
        **DELIVERED,
        "error": 'Refused: "stock" = 0',
        "model_revision": "8b5e0ba380f5",
        "reader_revision": "0c1d2e3f4a5b",
        "retry_at": "2026-11-30T02:16:11",
    }
    same = {**DELIVERED, "model_revision": "8b5e0ba380f5", "reader_revision": "8b5e0ba380f5"}
    with tracer.span("Shop.Fulfil.start") as span:
        log_fact("event_handled", logging.INFO, same)
        log_fact("retry_scheduled", logging.WARNING, failed)
    log_fact("tick_run", logging.INFO, {"timer": "Billing.nightly", "extra": {"n": [1, 2]}})
    log_fact("event_published", logging.INFO, {"model_revision": "8b5e0ba380f5", "key": "k"})
    handled, retry, tick, published = out.getvalue().splitlines()
    print(handled, retry, tick, published, sep="\n")
    trace_id, span_id = _ids(span)
    assert re.fullmatch(
        rf"{CLOCK} INFO  event_handled Shop\.Fulfil\.start Shop\.OrderPlaced "
        rf"id=01a22a3c-ebd9-75c4-9743-759464d9c370 corr=checkout-42 attempt=1 channel=shop "
        rf"trace={trace_id}",
        handled,
    ), handled
    # left out, in the JSON line only: the span id, a member without a value, the revisions
    # unless two differ
    assert span_id not in handled and "cause=" not in handled and "revision" not in handled
    # a value with a space, a quote or an `=` is quoted as JSON; the fact's own members follow
    assert retry.split(" WARN  ", 1)[1] == (
        "retry_scheduled Shop.Fulfil.start Shop.OrderPlaced "
        "id=01a22a3c-ebd9-75c4-9743-759464d9c370 corr=checkout-42 attempt=1 "
        r'error="Refused: \"stock\" = 0" channel=shop model_revision=8b5e0ba380f5 '
        "reader_revision=0c1d2e3f4a5b retry_at=2026-11-30T02:16:11 "
        f"trace={trace_id}"
    )
    assert re.fullmatch(
        rf'{CLOCK} INFO  tick_run timer=Billing\.nightly extra={{"n":\[1,2\]}}', tick
    )
    assert re.fullmatch(rf"{CLOCK} INFO  event_published key=k", published)


def test_the_text_layout_colours_the_level_and_the_fact_only_when_asked(
    written: tuple[io.StringIO, logging.Handler],
) -> None:
    out, handler = written
    handler.setFormatter(TextLines(colour=True))
    log_fact("event_dead_lettered", logging.ERROR, {"handler": "Shop.Fulfil.start"})
    line = out.getvalue().rstrip("\n")
    assert line.endswith(
        " \033[31mERROR\033[0m \033[1mevent_dead_lettered\033[0m Shop.Fulfil.start"
    )
    # a record that is no fact: the time, the level, its message
    plain = logging.LogRecord("uvicorn.error", logging.INFO, "", 0, "Started %s", ("x",), None)
    assert re.fullmatch(rf"{CLOCK} INFO  Started x", TextLines().format(plain))


def test_a_plain_line_written_inside_a_span_takes_its_trace_id(
    exported: tuple[Any, InMemorySpanExporter],
) -> None:
    tracer, _ = exported
    access = ("127.0.0.1:5000", "POST", "/api/orders", "1.1", 201)
    record = logging.LogRecord(
        "uvicorn.access", logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d', access, None
    )
    with tracer.span("POST /api/orders") as span:
        inside = TextLines().format(record)
    outside = TextLines().format(record)
    said = rf'{CLOCK} INFO  127\.0\.0\.1:5000 - "POST /api/orders HTTP/1\.1" 201'
    assert re.fullmatch(rf"{said} trace={_ids(span)[0]}", inside), inside
    assert re.fullmatch(said, outside), outside


def test_colour_on_a_terminal_unless_no_color_and_on_a_pipe_only_when_forced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    leader, follower = os.openpty()
    reader, writer = os.pipe()
    with (
        open(leader, "rb"),
        open(follower, "w") as terminal,
        open(reader, "rb"),
        open(writer, "w") as pipe,
    ):
        assert wants_colour(terminal) and not wants_colour(pipe)
        monkeypatch.setenv("FORCE_COLOR", "1")  # `loom up` writing to a terminal tells its child
        assert wants_colour(pipe)
        monkeypatch.setenv("NO_COLOR", "1")
        assert not wants_colour(terminal) and not wants_colour(pipe)


@pytest.mark.parametrize(("given", "read"), [("", "json"), ("json", "json"), (" Text ", "text")])
def test_the_log_format_is_read_from_its_variable(
    monkeypatch: pytest.MonkeyPatch, given: str, read: str
) -> None:
    monkeypatch.setenv("LOOM_LOG_FORMAT", given)
    assert log_format() == read


def test_a_log_format_it_does_not_know_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_LOG_FORMAT", "xml")
    with pytest.raises(ValueError, match=r"^LOOM_LOG_FORMAT must be json or text, not 'xml'$"):
        log_format()


SERVICE_LOGGING = """
import logging
from loom.runtime.values.logs import install_default_handler, log_fact
from loom.runtime.values.tracing import tracer_for
from tests.spans import Recorder

install_default_handler()
recorder = Recorder()
provider, exporter = recorder.provider, recorder.exporter
tracer = tracer_for("shop", provider=provider)
with tracer.span("Shop.Fulfil.start"):
    log_fact("event_handled", logging.INFO, {"handler": "Shop.Fulfil.start", "attempt": 1})
log_fact("event_dispatched", logging.DEBUG, {"event_type": "Shop.OrderPlaced"})
(span,) = exporter.get_finished_spans()
print(format(span.context.trace_id, "032x"))
"""


@pytest.mark.parametrize("layout", ["json", "text"])
def test_the_default_handler_writes_the_layout_asked_for_on_stderr(layout: str) -> None:
    # a process of its own: the handler is installed only where nothing configured logging
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_", "FORCE_COLOR"))}
    done = subprocess.run(
        [sys.executable, "-c", SERVICE_LOGGING],
        env={**env, "LOOM_LOG_FORMAT": layout},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    trace_id = done.stdout.strip()
    (line,) = done.stderr.splitlines()  # INFO and above (LOOM_LOG_LEVEL)
    if layout == "json":
        assert json.loads(line)["trace_id"] == trace_id, line
    else:
        said = rf"{CLOCK} INFO  event_handled Shop\.Fulfil\.start attempt=1 trace={trace_id}"
        assert re.fullmatch(said, line), line


LATER_HANDLER = """
import logging, sys
from loom.runtime.values.logs import install_default_handler, log_fact

install_default_handler()
log_fact("event_handled", logging.INFO, {"handler": "A", "attempt": 1})
later = logging.StreamHandler(sys.stdout)  # the app configures logging after Loom's handler
later.setFormatter(logging.Formatter("%(name)s %(funcName)s %(message)s"))
logging.getLogger().addHandler(later)
log_fact("event_handled", logging.INFO, {"handler": "B", "attempt": 1})
logging.getLogger().removeHandler(later)
logging.getLogger("loom").handlers[0].setLevel(logging.ERROR)
log_fact("event_handled", logging.INFO, {"handler": "C", "attempt": 1})
"""


def test_the_default_handler_writes_the_same_line_whatever_else_the_app_configures() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_", "FORCE_COLOR"))}
    done = subprocess.run(
        [sys.executable, "-c", LATER_HANDLER],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    line = '{"event": "event_handled", "level": "info", "handler": "%s", "attempt": 1}'
    assert done.stderr.splitlines() == [line % "A", line % "B"]
    assert done.stdout.splitlines() == [f"loom.events log_fact {line % 'B'}"]
