"""`loom up --otel-endpoint URL --log-format text` as a user runs it (docs/observability.md#traces): the shop's three
deployables (examples/shop/deployables.loom) and the NATS server `loom up` starts, each deployable
exporting to the one collector, here the receiver the test runs (tests/otlp.py). A failing order is
one trace through every deployable, its compensation included, complete by the model (the served
AsyncAPI documents' `x-loom-consumers`), with no orphan span."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import httpx
import pytest

from tests.chaos.deployables import DEPLOYABLES, EVENTS
from tests.cli.test_up import _wait_for, loom_up, needs_nats
from tests.liveserver import free_ports
from tests.otlp import Span, missing_reactions, receiving, subscribed_in

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples/shop/shop.loom"
SPLIT = (ROOT / "examples/shop/deployables.loom").read_text()
HTTP_ROOT = "POST /api/workflows/place_order"


@needs_nats
def test_up_gives_every_deployable_the_collector_and_an_order_is_one_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # each child exports within 0.1 s
    with receiving() as receiver:
        args = ("--otel-endpoint", receiver.url, "--log-format", "text")
        with loom_up(tmp_path, free_ports(5), SHOP, SPLIT, *args) as (proc, log):
            seen = _wait_for(log, proc, "Ctrl-C stops them all.", timeout=180)
            bases = dict(re.findall(r"^(\w+) +(http://127\.0\.0\.1:\d+)  \(", seen, re.MULTILINE))
            assert set(bases) == set(DEPLOYABLES), seen
            documents = [httpx.get(f"{b}/asyncapi.json").json() for b in bases.values()]
            subscribed = subscribed_in(documents)
            body = {"sku": "lamp", "quantity": 1, "failPayment": True}
            r = httpx.post(f"{bases['Orders']}/api/workflows/place_order", json=body)
            assert r.status_code == 200, r.text

            def root(spans: list[Span]) -> Span | None:
                return next((s for s in spans if s.name == HTTP_ROOT), None)

            order = receiver.wait(root, timeout=60, what="the order's HTTP span")

            def complete(_: list[Span]) -> list[Span] | None:
                trace = receiver.trace_of(order)
                return None if missing_reactions(trace, EVENTS[True], subscribed) else trace

            trace = receiver.wait(complete, timeout=60, what="every reaction in the trace")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=60) == 0, log.read_text()
    print(receiver.tree(order.trace_id))
    out = log.read_text()
    for name in DEPLOYABLES:  # each child's banner names the collector
        assert re.search(rf"^{name} +\| +traces: OTLP/HTTP to {receiver.url}/v1/traces$", out, re.M)
    assert [s.name for s in trace if s.parent_id is None] == [HTTP_ROOT]
    assert receiver.orphans(trace) == []
    assert {s.service for s in trace} == set(DEPLOYABLES)
    assert all(s.attributes.get("loom.deployable") == s.service for s in trace)
    reactors = {s.attributes.get("loom.reactor") for s in trace}
    assert "Orders.settleOrder.on(Payment.OrderCancelled)" in reactors  # the compensation's end
    # and the lines each deployable wrote about the order carry its trace id: one request is
    # followed across the processes by it
    tagged = {
        name
        for name in DEPLOYABLES
        if re.search(rf"^{name} +\|.* trace={order.trace_id}", out, re.M)
    }
    assert tagged == set(DEPLOYABLES), out[-3000:]
    print(f"one trace of {len(trace)} spans over {len(DEPLOYABLES)} deployables, no orphan")
