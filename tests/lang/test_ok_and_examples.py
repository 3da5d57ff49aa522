"""Models that must compile clean: the examples, the seed's own examples, and data/ok/*."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from loom.lang import compile_files, render_text
from loom.model import ir

ROOT = Path(__file__).resolve().parents[2]
OK = Path(__file__).parent / "data" / "ok"
BANKING = ["examples/banking/banking.loom"]
SALES = ["examples/sales/sales.loom", "examples/sales/onboarding.loom"]


def compiled(paths: list[str]) -> ir.Model:
    result = compile_files([str(ROOT / p) if not Path(p).is_absolute() else p for p in paths])
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model


def workflow(model: ir.Model, context: str, name: str) -> ir.WorkflowCreate:
    ctx = next(c for c in model.contexts if c.name == context)
    wf = next(w for w in ctx.workflows if w.name == name)
    assert len(wf.creates) == 1
    return wf.creates[0]


@pytest.mark.parametrize("path", sorted(OK.glob("*.loom")), ids=lambda p: p.name)
def test_ok_models_compile_clean(path: Path) -> None:
    compiled([str(path)])


def test_banking_lowers_with_exit_saves() -> None:
    model = compiled(BANKING)
    transfer = workflow(model, "Banking", "transfer")
    *_, s1, s2, ret = transfer.body
    assert isinstance(ret, ir.Return) and ret.value.text == "source.balance"
    assert (s1, s2) == (
        ir.Save("source", "Accounts", "Account", fresh=False),
        ir.Save("target", "Accounts", "Account", fresh=False),
    )
    assert transfer.result == ir.INT

    open_account = workflow(model, "Banking", "openAccount")
    saves = [s for s in open_account.body if isinstance(s, ir.Save)]
    assert saves == [
        ir.Save("account", "Accounts", "Account", fresh=True)
    ]  # customer: loaded, untouched
    create = next(s for s in open_account.body if isinstance(s, ir.CreateAggregate))
    names = [n for n, _ in create.args]
    assert names == ["owner", "number", "balance", "kind", "openedAt", "tags", "frozen"]
    args = dict(create.args)
    assert isinstance(args["kind"], ir.EnumMember) and args["kind"].member == "Checking"
    assert isinstance(args["openedAt"], ir.Now)
    assert isinstance(args["tags"], ir.ListLiteral) and args["tags"].type == ir.ListType(ir.STRING)


def test_banking_declarations() -> None:
    model = compiled(BANKING)
    (ctx,) = model.contexts
    account = ctx.aggregate("Account")
    assert [f.name for f in account.fields][:3] == ["owner", "number", "balance"]
    assert account.fields[0].type == ir.IdType("Customer", "Banking")
    withdraw = next(o for o in account.operations if o.name == "withdraw")
    assert withdraw.emits == ("MoneyWithdrawn",)
    emit = withdraw.body[-1]
    assert isinstance(emit, ir.Emit) and [n for n, _ in emit.args] == ["account", "amount"]
    assert emit.args[0][1] == ir.SelfField("id", ir.IdType("Account", "Banking"), "id", "id")
    fee = account.functions[0]
    assert fee.value is not None and fee.value.type == ir.INT
    audited = next(w for w in ctx.workflows if w.name == "auditedTransfer")
    assert audited.transactional and audited.isolation == "serializable"
    loose = next(w for w in ctx.workflows if w.name == "looseTransfer")
    assert not loose.transactional and loose.isolation is None
    assert model.sources == (str(ROOT / BANKING[0]),)


def test_sales_spans_two_files_as_one_context() -> None:
    model = compiled(SALES)
    (ctx,) = model.contexts
    assert [w.name for w in ctx.workflows] == ["placeOrder", "transferCredit", "registerCustomer"]
    place = workflow(model, "Sales", "placeOrder")
    saves = [s for s in place.body if isinstance(s, ir.Save)]
    assert saves == [ir.Save("order", "Orders", "Order", fresh=True)]
    assert isinstance(place.body[-1], ir.Save)
    register = workflow(model, "Sales", "registerCustomer")
    create = register.body[0]
    assert isinstance(create, ir.CreateAggregate)
    assert [(n, e.text if e else None) for n, e in create.args] == [
        ("name", "name"),
        ("creditLimit", "creditLimit"),
    ]
    assert register.origin.file.endswith("onboarding.loom")


def test_relative_paths_stay_relative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    result = compile_files(BANKING)
    assert result.ok and result.model is not None
    assert result.model.sources == tuple(BANKING)
    assert result.model.contexts[0].origin.file == BANKING[0]
    assert list(result.sources) == BANKING


def test_compiling_banking_is_fast() -> None:
    compiled(BANKING)  # warm: the parser is built once per process
    start = time.perf_counter()
    for _ in range(5):
        compiled(BANKING)
    assert (time.perf_counter() - start) / 5 < 0.25


def test_shop_is_three_contexts_joined_by_events() -> None:
    model = compiled(["examples/shop/shop.loom"])
    orders, inventory, payment = model.contexts
    assert [c.name for c in model.contexts] == ["Orders", "Inventory", "Payment"]
    reserve = next(w for w in inventory.workflows if w.name == "reserveStock")
    assert reserve.creates == () and reserve.correlation is None
    assert [r.event for r in reserve.reactions] == [
        ir.EventType("OrderPlaced", "Orders"),
        ir.EventType("PaymentFailed", "Payment"),
        ir.EventType("PaymentTimedOut", "Orders"),  # the payment deadline's compensation
    ]
    take = next(w for w in payment.workflows if w.name == "takePayment")
    branch = next(s for s in take.reactions[0].body if isinstance(s, ir.If))
    assert [type(s) for s in branch.then] == [ir.Emit] == [type(s) for s in branch.otherwise]
    carried = [e for c in model.contexts for ch in c.channels for e in ch.events]
    assert len(carried) == 7 and len(set(carried)) == 7  # every event of the flow is durable
    (progress,) = orders.projections
    assert progress.key == "order" and len(progress.reactions) == 6
