"""The flow pass (`loom.lang.flow`): the examples are clean of its warnings, and its result — the
model's event flow and state machines — reads as the shop's choreography does. Each code's positive
and negative cases are data-driven (data/diagnostics/flow_*.loom)."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.lang import compile_files, render_text
from loom.lang.diagnostics import Sink
from loom.lang.flow import FlowResult, check_flow
from loom.model import ir

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir())


def _flow(paths: list[Path]) -> tuple[ir.Model, FlowResult]:
    result = compile_files([str(p) for p in paths])
    assert result.model is not None, render_text(result.diagnostics, result.sources)
    sink = Sink()
    flow = check_flow(result.model, result.sources, sink)
    assert sink.items == []
    return result.model, flow


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_is_clean(example: Path) -> None:
    result = compile_files([str(p) for p in sorted(example.glob("*.loom")) if p.is_file()])
    assert result.diagnostics == [], render_text(result.diagnostics, result.sources)


def test_the_shop_choreography_as_the_flow_reads_it() -> None:
    _, result = _flow([ROOT / "examples/shop/shop.loom"])
    flow = result.flow
    placed = ("Orders", "OrderPlaced")
    assert [(c.context, c.owner, c.kind) for c in flow.consumers[placed]] == [
        ("Orders", "PaymentDeadline", "process"),
        ("Orders", "OrderProgress", "projection"),
        ("Inventory", "reserveStock", "workflow"),
    ]
    assert [body.label for body, _ in flow.emits[placed]] == ["workflow `placeOrder`"]
    # Payment's failure sets off the compensation: Inventory releases, through an operation
    consumers = flow.consumers[("Payment", "PaymentFailed")]
    failed = next(c for c in consumers if c.owner == "reserveStock")
    assert flow.sets_off(failed.body) == {("Inventory", "ReservationReleased")}
    (order,) = result.machines
    assert (order.aggregate.name, order.field.name) == ("Order", "status")
    assert order.initial == {"Pending"} and order.reachable == {"Pending", "Paid", "Cancelled"}
    assert order.enum.terminal == ("Paid", "Cancelled")
    assert order.exits("Pending") == {"Paid", "Cancelled"} and order.exits("Paid") == frozenset()


def test_terminal_members_are_lowered() -> None:
    result = compile_files([str(ROOT / "examples/shop/shop.loom")])
    assert result.model is not None
    (status,) = result.model.contexts[0].enums
    assert (status.members, status.terminal) == (
        ("Pending", "Paid", "Cancelled"),
        ("Paid", "Cancelled"),
    )
