"""The service of a set of contexts (one deployable): `generate(model, contexts=...)`.

The shop split as {Orders} and {Inventory, Payment}: snapshots, typing (mypy --strict), ruff, and
the generated app itself over HTTP: it serves and stores only its own contexts.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, inspect

from loom.codegen.python import generate
from loom.lang import compile_files
from loom.model import ir
from loom.runtime import StartupRefused
from tests.codegen.test_generate import EXAMPLES, compile_example
from tests.codegen.util import (
    ROOT,
    check_snapshots,
    import_generated,
    mypy_strict,
    ruff,
    write_tree,
)

SPLITS = {"shop_orders": {"Orders"}, "shop_inventory_payment": {"Inventory", "Payment"}}


@pytest.fixture(scope="module")
def shop() -> ir.Model:
    return compile_example("shop")


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_snapshots(shop: ir.Model, name: str, update_snapshots: bool) -> None:
    check_snapshots(name, generate(shop, contexts=SPLITS[name]), update_snapshots)


def test_a_caller_of_another_contexts_api_gets_its_records_in_the_contract(
    update_snapshots: bool,
) -> None:
    """Dispatch calls Directory's handlers: Directory's contract holds the payload, value object
    and enum those take and answer, with their wire models, and nothing of Directory runs."""
    files = generate(compile_example("api_calls"), contexts={"Dispatch"})
    check_snapshots("api_calls_dispatch", files, update_snapshots)
    contract = sorted(f for f in files if f.startswith("directory/"))
    assert contract == [
        "directory/__init__.py",
        "directory/domain.py",
        "directory/ids.py",
        "directory/schemas.py",
    ]
    for name in ("class TechnicianViewInput", "class SkillInput", "class SkillOut"):
        assert name in files["directory/schemas.py"]
    assert "class Level" in files["directory/domain.py"]
    resource = (
        '    ApiResource(\n        owner="Dispatch",\n        name="directory",\n'
        '        context="Directory",\n        timeout=2,\n        retries=2,\n    ),'
    )
    assert resource in files["main.py"]


def test_no_subset_is_the_whole_model(shop: ir.Model) -> None:
    whole = generate(shop)
    assert generate(shop, contexts=None) == whole
    every = generate(shop, contexts={c.name for c in shop.contexts})
    # the same package, but for the constant naming what it holds
    assert set(every) == set(whole)
    assert 'CONTEXTS = ("Orders", "Inventory", "Payment")' in every["main.py"]
    assert "CONTEXTS" not in whole["main.py"]
    assert {k for k in whole if every[k] != whole[k]} == {"main.py"}


def test_other_contexts_are_only_their_contract(shop: ir.Model) -> None:
    files = generate(shop, contexts={"Orders"})
    # Orders consumes Payment's and Inventory's events: their ids and events, nothing else
    for other in ("inventory", "payment"):
        assert sorted(k for k in files if k.startswith(f"{other}/")) == [
            f"{other}/__init__.py",
            f"{other}/domain.py",
            f"{other}/ids.py",
        ]
    domain = files["payment/domain.py"]
    for event in ("PaymentSucceeded", "PaymentFailed", "OrderCancelled"):
        assert f"class {event}(DomainEvent)" in domain
    assert "class Charge" not in domain and "AggregateRoot" not in domain
    main = files["main.py"]
    assert 'CONTEXTS = ("Orders",)' in main
    assert "payment_routes" not in main and "inventory_reactions" not in main
    # it publishes to Fulfilment and consumes from Stock (its projection) and Payments
    for channel in ("Orders.Fulfilment", "Inventory.Stock", "Payment.Payments"):
        assert f'"{channel}"' in main


def test_channels_of_neither_side_are_left_out() -> None:
    # Alpha's service neither publishes to nor consumes from Gamma's channel
    model = _three_contexts()
    main = generate(model, contexts={"Alpha"})["main.py"]
    assert '"Alpha.Out"' in main and '"Gamma.Own"' not in main
    assert not any(k.startswith("gamma/") for k in generate(model, contexts={"Alpha"}))
    # Beta consumes Alpha's event: Alpha's contract, and the channel that carries it
    beta = generate(model, contexts={"Beta"})
    assert '"Alpha.Out"' in beta["main.py"] and '"Gamma.Own"' not in beta["main.py"]
    assert "alpha/domain.py" in beta and "alpha/tables.py" not in beta


def test_unknown_context_is_refused(shop: ir.Model) -> None:
    with pytest.raises(ValueError, match=r"no context Shipping .*Orders, Inventory, Payment"):
        generate(shop, contexts={"Orders", "Shipping"})


TOPOLOGY = ["tests/lang/data/ok/topology.loom"]  # three deployables, channels across them


@pytest.mark.parametrize(
    ("name", "files", "contexts"),
    [
        *[(name, EXAMPLES["shop"], held) for name, held in sorted(SPLITS.items())],
        ("shop_deployable", TOPOLOGY, {"Orders", "Catalog"}),
        ("warehouse", TOPOLOGY, {"Inventory"}),
        ("billing", TOPOLOGY, {"Payment"}),
    ],
)
def test_subset_passes_mypy_strict_and_ruff(
    name: str, files: list[str], contexts: set[str], tmp_path: Path
) -> None:
    result = compile_files([str(ROOT / f) for f in files])
    assert result.model is not None
    write_tree(generate(result.model, package=name, contexts=contexts), tmp_path / name)
    run = mypy_strict(tmp_path, name)
    assert run.returncode == 0, run.stdout + run.stderr
    fmt = ruff("format", "--isolated", "--check", "--diff", str(tmp_path / name))
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = ruff("check", "--isolated", "--select", "F,E9", str(tmp_path / name))
    assert lint.returncode == 0, lint.stdout + lint.stderr


async def test_subset_serves_and_stores_only_its_contexts(tmp_path: Path) -> None:
    # Beta's yarns hold Alpha's ids: Beta's service has Alpha's contract (its ids) only
    model = compile_example("mutual_ids")
    out = write_tree(generate(model, package="beta", contexts={"Beta"}), tmp_path / "beta")
    assert sorted(p.name for p in (out / "alpha").iterdir()) == [
        "__init__.py",
        "domain.py",
        "ids.py",
    ]
    db = tmp_path / "beta.db"
    app = import_generated(out).build_app(f"sqlite+aiosqlite:///{db}")
    paths = set(app.openapi()["paths"])
    assert "/api/yarns" in paths and not any("xylos" in p for p in paths), sorted(paths)
    owner = str(uuid.uuid4())
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
            r = await client.post("/api/yarns", json={"name": "wool", "owner": owner})
            assert r.status_code == 201, r.text
            r = await client.get(f"/api/yarns/{r.json()['id']}")
            assert (r.status_code, r.json()["owner"]) == (200, owner), r.text
            assert (await client.get("/api/xylos")).status_code == 404
    engine = create_engine(f"sqlite:///{db}")
    try:
        tables = set(inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert "beta_yarns" in tables and not any(t.startswith("alpha") for t in tables), tables


async def test_the_service_tells_the_runtime_what_it_holds(
    shop: ir.Model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOM_BROKER", raising=False)
    # Orders consumes Payment's events: held alone, they must come over a broker, and the
    # runtime (told CONTEXTS) refuses to start without one
    out = write_tree(generate(shop, package="orders", contexts={"Orders"}), tmp_path / "orders")
    main = import_generated(out)
    assert main.CONTEXTS == ("Orders",)
    app = main.build_app(f"sqlite+aiosqlite:///{tmp_path / 'orders.db'}")
    with pytest.raises(
        StartupRefused, match=r"Payment.Payments must carry events .*no broker is configured"
    ):
        async with app.router.lifespan_context(app):
            pass


def _three_contexts() -> ir.Model:
    origin = ir.Origin("m.loom", 1, 1)
    out = ir.Event("Out", "Alpha", (), origin)
    own = ir.Event("Own", "Gamma", (), origin)

    def context(
        name: str,
        events: tuple[ir.Event, ...] = (),
        workflows: tuple[ir.Workflow, ...] = (),
        channels: tuple[ir.Channel, ...] = (),
    ) -> ir.Context:
        return ir.Context(name, (), (), (), events, workflows, origin, channels=channels)

    beta_wf = ir.Workflow(
        "hear",
        "Beta",
        False,
        None,
        (),
        origin,
        reactions=(ir.Reaction("on", ir.EventType("Out", "Alpha"), "e", None, (), origin),),
    )
    return ir.Model(
        (
            context(
                "Alpha",
                events=(out,),
                channels=(ir.Channel("Out", "Alpha", (ir.EventType("Out", "Alpha"),), origin),),
            ),
            context("Beta", workflows=(beta_wf,)),
            context(
                "Gamma",
                events=(own,),
                channels=(ir.Channel("Own", "Gamma", (ir.EventType("Own", "Gamma"),), origin),),
            ),
        ),
        ("m.loom",),
    )
