"""What the topology diagnostics point at and suggest: the spans the data-driven cases cannot
state (they check codes and lines only), and the help texts."""

from __future__ import annotations

from loom.lang import compile_sources
from loom.lang.diagnostics import Diagnostic


def only(text: str) -> Diagnostic:
    [d] = compile_sources({"m.loom": text}).diagnostics
    return d


def at(text: str, d_span: tuple[int, int], needle: str, nth: int = 0) -> bool:
    """Whether the span (line, column) is the `nth` occurrence of `needle` in the text."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(needle, start + 1)
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return d_span == (line, column)


def test_a_context_in_two_deployables_points_at_both_mentions() -> None:
    text = (
        "deployable A { contexts: Orders }\ndeployable B { contexts: Orders }\ncontext Orders { }"
    )
    d = only(text)
    assert d.code == "loom.deployable-overlap"
    assert at(text, (d.span.line, d.span.column), "Orders", 1)  # the second mention
    [(first, label)] = d.secondary
    assert at(text, (first.line, first.column), "Orders", 0) and label == "in `A` first"


def test_an_unknown_context_suggests_the_closest() -> None:
    d = only("deployable A { contexts: Order }\ncontext Orders { }")
    assert (d.code, d.help) == ("loom.unknown-context", "did you mean `Orders`?")


def test_kafka_is_refused_with_the_reason() -> None:
    d = only("channelSource Bus { kind: kafka }\ncontext A { }")
    assert d.code == "loom.channel-source-setting"
    assert d.help is not None and "no test of this project runs a Kafka server" in d.help


def test_an_unknown_channel_source_suggests_the_closest() -> None:
    d = only(
        "channelSource Bus { kind: nats }\n"
        "context A { event E { }\n channel C { carries: E  source: Buss } }"
    )
    assert (d.code, d.help) == ("loom.unknown-channel-source", "did you mean `Bus`?")


def test_a_crossing_without_channel_points_at_trigger_event_and_both_deployables() -> None:
    text = (
        "deployable Shop { contexts: Orders }\ndeployable Back { contexts: Payment }\n"
        "context Orders { event Placed { n: int } }\n"
        "context Payment { workflow w { on(e: Orders.Placed) { } } }"
    )
    d = only(text)
    assert d.code == "loom.crossing-without-channel"
    assert at(text, (d.span.line, d.span.column), "Orders.Placed")
    spans = [((s.line, s.column), label) for s, label in d.secondary]
    assert [label for _, label in spans] == [
        "raised by context `Orders`",
        "`Orders` runs here",
        "`Payment` runs here",
    ]
    assert at(text, spans[0][0], "Placed")
    assert at(text, spans[1][0], "Shop")
    assert at(text, spans[2][0], "Back")
    assert d.help == (
        "carry it on a channel, e.g. in context `Orders`: `channel Published { carries: Placed }`"
    )
