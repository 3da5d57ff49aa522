"""The `events` section of `console.json` (what will run per event) on the shop split into its
three deployables: each consumer in its own deployable, with what its body runs and the gates."""

from __future__ import annotations

from pathlib import Path

from loom.codegen.python.console import console_document
from loom.lang import compile_files
from loom.model import ir

SHOP = Path(__file__).resolve().parents[2] / "examples" / "shop"


def shop_in_three() -> ir.Model:
    result = compile_files([SHOP / "shop.loom", SHOP / "deployables.loom"])
    assert result.model is not None, [str(d) for d in result.diagnostics]
    return result.model


def test_each_consumer_in_its_deployable_with_what_it_runs() -> None:
    events = console_document(shop_in_three(), None)["events"]
    timed_out = events["Orders.PaymentTimedOut"]
    assert timed_out["channel"] == "Orders.Fulfilment"
    (release,) = timed_out["consumers"]
    assert release == {
        "name": "Inventory.reserveStock.on(Orders.PaymentTimedOut)",
        "kind": "reactor",
        "context": "Inventory",
        "owner": "reserveStock",
        "deployable": "Inventory",
        "runs": [
            {
                "kind": "operation",
                "name": "Inventory.Reservation.release",
                "gates": ["when !released"],
            }
        ],
    }
    placed = {c["name"]: c for c in events["Orders.OrderPlaced"]["consumers"]}
    assert placed["Orders.PaymentDeadline.create(OrderPlaced)"]["kind"] == "process"
    assert placed["Orders.PaymentDeadline.create(OrderPlaced)"]["deployable"] == "Orders"
    assert placed["Inventory.reserveStock.on(Orders.OrderPlaced)"]["deployable"] == "Inventory"
    assert list(events) == sorted(events)


def test_a_deployable_s_document_names_the_events_it_emits_or_consumes() -> None:
    model = shop_in_three()
    held = console_document(model, {"Payment"})["events"]
    every = console_document(model, None)["events"]
    assert set(held) < set(every)
    for name, event in every.items():
        contexts = {name.split(".")[0], *(c["context"] for c in event["consumers"])}
        assert (name in held) == ("Payment" in contexts), name
    # the consumers are the whole model's, in whichever deployable they run
    assert held["Inventory.StockReserved"] == every["Inventory.StockReserved"]
