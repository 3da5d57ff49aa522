"""What each view draws from a model, read as the graph the renderers get (the ids, the groups,
the labelled edges): the state machines' gates and assignments, the context map's channels and
API calls, the deployables' brokers. Golden files of the examples are test_examples.py."""

from __future__ import annotations

from itertools import pairwise

from loom.codegen.diagrams import (
    context_graph,
    deployables_graph,
    flow_graph,
    narrowed,
    states_graph,
)
from loom.codegen.diagrams.graph import Graph
from loom.codegen.diagrams.mermaid import mermaid_id
from loom.codegen.python.keyed import process_name
from loom.lang import compile_sources
from loom.model import ir
from tests.codegen.diagrams.test_examples import example

MACHINES = """
context A {
  enum S { New, Held, Open, Done }
  event Opened { x: Thing id }
  aggregate Thing {
    status: S = New
    flag: bool = false
    derived live: bool = status == Held || status == Open
    operation hold() when status in [New] { status := Held }
    operation open(ok: bool) when live && !flag { status := ok ? Open : Done }
    operation finish() { status := Done }
    operation reset() when status != Done && flag { wipe() }
    private operation wipe() when status != Held { status := New }
  }
  repository Things for Thing { }
  workflow Watch once {
    x: Thing id
    create(e: Opened) by e.x { schedule t after 1m }
    on timeout t {
      let th = Things.getById(x)
      if th.flag { complete }
    }
  }
}
"""

MAP = """
deployable Front { contexts: Shop, Catalog }
deployable Back { contexts: Billing }
channelSource Bus { kind: nats }
context Catalog {
  event Priced { sku: string }
  aggregate Item { sku: string }
  queryHandler Price(sku: string): int { return 1 }
}
context Shop {
  resource catalog { kind: api  context: Catalog }
  resource billing { kind: api  context: Billing }
  event Ordered { sku: string }
  aggregate Cart { sku: string  price: int = 0 }
  commandHandler Buy(sku: string) {
    let p = catalog.Price(sku: sku)
    emit Ordered { sku: sku }
  }
  workflow prices { on(e: Catalog.Priced) { } }
  channel Orders { carries: Ordered  source: Bus }
}
context Billing {
  commandHandler Charge(sku: string) { }
  workflow bill { on(e: Shop.Ordered) { } }
}
"""


def compiled(text: str) -> ir.Model:
    result = compile_sources({"m.loom": text})
    assert result.model is not None, [d.message for d in result.diagnostics]
    return result.model


def arrows(graph: Graph) -> set[tuple[str, str, str]]:
    return {(e.source, e.target, e.label) for e in graph.edges}


def test_an_aggregate_moves_where_its_gates_let_it_and_to_what_it_assigns() -> None:
    graph = states_graph(compiled(MACHINES))
    moves = {(s, t, label) for s, t, label in arrows(graph) if s.startswith("A.Thing.status.")}
    short = {(s.rpartition(".")[2], t.rpartition(".")[2], label) for s, t, label in moves}
    assert short == {
        ("New", "Held", "hold"),  # `in [New]`
        ("Held", "Open", "open"),  # through the derived `live`, both members of `ok ? … : …`
        ("Held", "Done", "open"),
        ("Open", "Done", "open"),
        ("New", "Done", "finish"),  # no gate: from every other state
        ("Held", "Done", "finish"),
        ("Open", "Done", "finish"),
        # both gates, reset's and the private wipe's it calls: not from Held, Done, nor New to New
        ("Open", "New", "reset"),
    }
    assert ("A.Thing.status:start", "A.Thing.status.New", "") in arrows(graph)
    machine = [n.id for n in graph.members()["A.Thing.status"]]
    assert machine == [
        "A.Thing.status:start",
        *(f"A.Thing.status.{m}" for m in ("New", "Held", "Open", "Done")),
    ]


def test_a_process_starts_runs_and_completes_in_a_branch() -> None:
    graph = states_graph(compiled(MACHINES))
    process = {(s, t, label) for s, t, label in arrows(graph) if s.startswith("A.Watch")}
    assert process == {
        ("A.Watch:start", "A.Watch.running", "create(Opened) / schedule t"),
        ("A.Watch.running", "A.Watch.running", "timeout t"),  # `complete` only in a branch
        ("A.Watch.running", "A.Watch.completed", "timeout t"),
        ("A.Watch.completed", "A.Watch:end", ""),  # `once`: no next episode
    }


def test_the_context_map_groups_by_deployable_and_labels_channels_and_calls() -> None:
    graph = context_graph(compiled(MAP))
    assert [(g.id, [n.id for n in graph.members()[g.id]]) for g in graph.groups] == [
        ("Front", ["Shop", "Catalog"]),
        ("Back", ["Billing"]),
    ]
    assert {(e.source, e.target, e.label, e.dashed) for e in graph.edges} == {
        ("Catalog", "Shop", "Priced", True),  # on no channel: in one process
        ("Shop", "Billing", "Shop.Orders (Bus): Ordered", False),
        ("Shop", "Catalog", "api catalog: Price", True),
        ("Shop", "Billing", "api billing", True),  # bound, not called
    }


def test_a_model_without_deployables_is_one_ungrouped_service() -> None:
    model = compiled(MACHINES)
    assert context_graph(model).groups == []
    graph = deployables_graph(model)
    assert [n.id for n in graph.nodes] == ["model", "model:database"]


def test_deployables_their_databases_brokers_channels_and_calls() -> None:
    graph = deployables_graph(compiled(MAP))
    assert [(g.id, g.label) for g in graph.groups] == [("Bus", "broker Bus (nats)")]
    assert [n.id for n in graph.members()["Bus"]] == ["Shop.Orders"]
    assert arrows(graph) == {
        ("Front", "Front:database", ""),
        ("Back", "Back:database", ""),
        ("Front", "Shop.Orders", "Shop.Ordered"),
        ("Shop.Orders", "Back", "Shop.Ordered"),
        ("Front", "Back", "api: Billing"),  # Catalog is served by Front itself
    }


def test_mermaid_ids_are_letters_digits_and_escapes_and_never_collide() -> None:
    assert mermaid_id("Orders.Fulfilment") == "Orders_2e_Fulfilment"
    assert mermaid_id("Orders:database") == "Orders_3a_database"
    assert mermaid_id("end") == "_65_nd" and mermaid_id("End") == "End"  # a Mermaid keyword
    names = ["a_.b", "a._b", "a__b", "a.b", "a_2e_b", "a_b", "end", "_65_nd", "e_6e_d"]
    ids = [mermaid_id(n) for n in names]
    assert len(set(ids)) == len(ids)
    assert all(i.replace("_", "").isalnum() for i in ids)


def test_ids_are_the_names_the_generated_services_use() -> None:
    shop = example("shop")
    processes = {process_name(w) for c in shop.contexts for w in c.workflows if w.process}
    machines = states_graph(shop).groups
    assert processes == {g.id for g in machines if g.label.startswith("process ")}
    assert [n.id for n in context_graph(shop).nodes] == [c.name for c in shop.contexts]
    deployables = deployables_graph(shop)
    assert {n.id for n in deployables.nodes if n.shape == "box"} == {
        d.name for d in shop.deployables
    }
    assert {n.id for n in deployables.nodes if n.shape == "queue"} == {
        f"{c.name}.{ch.name}" for c in shop.contexts for ch in c.channels
    }


def test_the_shops_flow_reads_as_its_choreography() -> None:
    """From the order's route: the happy path (reserved, paid, settled) and the compensation
    (payment failed or timed out: released, cancelled), each hop an arrow of the flow view."""
    graph = narrowed(flow_graph(example("shop")), "POST /api/workflows/place_order")
    assert graph is not None
    hops = {(s, t) for s, t, _ in arrows(graph)}
    path = [
        "Orders.placeOrder",
        "Orders.OrderPlaced",
        "Inventory.reserveStock.on(Orders.OrderPlaced)",
        "Inventory.StockReserved",
        "Payment.takePayment.on(Inventory.StockReserved)",
        "Payment.PaymentFailed",
        "Inventory.reserveStock.on(Payment.PaymentFailed)",
        "Inventory.Reservation.release",
        "Inventory.ReservationReleased",
        "Payment.takePayment.on(Inventory.ReservationReleased)",
        "Payment.OrderCancelled",
        "Orders.settleOrder.on(Payment.OrderCancelled)",
        "Orders.Order.cancel",
    ]
    assert [hop for hop in pairwise(path) if hop not in hops] == []
    # the happy path's end, and the timeout that arms on the order
    assert ("Payment.PaymentSucceeded", "Orders.settleOrder.on(Payment.PaymentSucceeded)") in hops
    assert ("Orders.settleOrder.on(Payment.PaymentSucceeded)", "Orders.Order.markPaid") in hops
    schedule = ("Orders.PaymentDeadline.create(OrderPlaced)", "Orders.PaymentDeadline.payment")
    assert schedule in hops
    # narrowed: nothing the order's route does not set off
    assert "Inventory.Stock.restock" not in {n.id for n in graph.nodes}
