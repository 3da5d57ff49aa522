"""Lowering of deployables and channel sources, and the walkers of loom.model.deployables over the
lowered model (issue 12). The model is data/ok/topology.loom."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.codegen.python import generate
from loom.lang import compile_files, compile_sources, render_text
from loom.model import deployables, ir
from loom.model.deployables import consumer_name, consumers_of, crossings, deployable_of
from loom.model.ir.topology import IMPLICIT, ChannelSource, Deployable

OK = Path(__file__).parent / "data" / "ok" / "topology.loom"


def model() -> ir.Model:
    result = compile_files([str(OK)])
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model


def channel(m: ir.Model, name: str) -> ir.Channel:
    return next(ch for c in m.contexts for ch in c.channels if ch.name == name)


def test_the_declarations_lower_in_source_order() -> None:
    m = model()
    assert [(d.name, d.contexts) for d in m.deployables] == [
        ("Shop", ("Orders", "Catalog")),
        ("Warehouse", ("Inventory",)),
        ("Billing", ("Payment",)),
    ]
    assert all(d.origin is not None and d.origin.file == str(OK) for d in m.deployables)
    assert [d.origin.line for d in m.deployables if d.origin] == [2, 3, 4]
    assert [(s.name, s.kind) for s in m.channel_sources] == [("Bus", "nats"), ("Streams", "redis")]
    assert channel(m, "Placed").source == "Bus"
    assert channel(m, "Placed").retention == "log"  # the other settings beside `source`
    assert channel(m, "Failures").source == "Streams"
    assert channel(m, "Local").source is None


def test_a_model_without_deployables_is_one_implicit_deployable() -> None:
    text = "context A { aggregate X { n: int } }\ncontext B { aggregate Y { n: int } }"
    result = compile_sources({"m.loom": text})
    assert result.model is not None
    m = result.model
    assert m.deployables == () and m.channel_sources == ()
    (only,) = deployables.deployables_of(m)
    assert only == Deployable(IMPLICIT, ("A", "B"), None) and only.implicit
    assert deployable_of(m, "B") == only
    assert crossings(m) == ()


def test_the_topology_may_be_declared_in_another_file() -> None:
    result = compile_sources(
        {
            "orders.loom": "context Orders { aggregate Order { n: int } }",
            "deploy.loom": "deployable Shop { contexts: Orders }\nchannelSource B { kind: redis }",
        }
    )
    assert result.ok, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    (shop,) = result.model.deployables
    assert shop.contexts == ("Orders",) and shop.origin is not None
    assert shop.origin.file == "deploy.loom" and not shop.implicit
    assert result.model.channel_sources == (
        ChannelSource("B", "redis", ir.Origin("deploy.loom", 2, 1)),
    )


def test_deployable_of_names_the_one_running_a_context() -> None:
    m = model()
    assert {c.name: deployable_of(m, c.name).name for c in m.contexts} == {
        "Orders": "Shop",
        "Catalog": "Shop",
        "Inventory": "Warehouse",
        "Payment": "Billing",
    }
    with pytest.raises(LookupError, match="Nowhere"):
        deployable_of(m, "Nowhere")


def test_consumers_of_a_channel_across_the_model() -> None:
    m = model()
    got = [(c.name, c.context, c.owner) for c in consumers_of(m, channel(m, "Placed"))]
    assert got == [
        ("Inventory.reserve.on(Orders.OrderPlaced)", "Inventory", "reserve"),
        ("Inventory.Hold.create(Orders.OrderPlaced)", "Inventory", "Hold"),
        ("Inventory.Hold.on(Orders.OrderCancelled)", "Inventory", "Hold"),
        ("Payment.Cancelled.on(Orders.OrderCancelled)", "Payment", "Cancelled"),
    ]
    # a channel declared in one context, carrying another's event: its consumers in both
    local = [c.name for c in consumers_of(m, channel(m, "Local"))]
    assert local == ["Catalog.note.on(Orders.OrderNoted)", "Payment.refund.on(Orders.OrderNoted)"]
    assert consumers_of(m, channel(m, "Failures")) == ()  # nothing reacts to PaymentFailed


def test_the_consumer_name_is_the_one_the_generated_service_subscribes() -> None:
    m = model()
    files = generate(m)
    reactions = "".join(text for path, text in files.items() if path.endswith("reactions.py"))
    names = [c.name for c in deployables.consumers(m)]
    assert len(names) == 7
    for name in names:
        assert f'"{name}"' in reactions, name
    own = ir.Reaction("on", ir.EventType("Placed", "Orders"), "e", None, (), ir.Origin("m", 1, 1))
    assert consumer_name("Orders", "audit", own) == "Orders.audit.on(Placed)"


def test_crossings_are_the_events_consumed_in_another_deployable() -> None:
    m = model()
    got = [
        (c.event.name, c.producer, c.consumer, c.channel.name if c.channel else None)
        for c in crossings(m)
    ]
    assert got == [
        # Catalog's reactions run beside Orders (Shop): no crossing
        ("OrderPlaced", "Shop", "Warehouse", "Placed"),  # once, for two reactions
        ("OrderCancelled", "Shop", "Warehouse", "Placed"),
        # per consuming deployable; a workflow's reactions before a projection's
        ("OrderNoted", "Shop", "Billing", "Local"),
        ("OrderCancelled", "Shop", "Billing", "Placed"),
    ]
