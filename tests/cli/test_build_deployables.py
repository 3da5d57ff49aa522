"""`loom build` of a model that declares deployables: one service package per deployable below
the output folder, each holding only its contexts, written and replaced as one build."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.build.package import MARKER, build_model, load_app
from loom.lang import compile_sources
from tests.cli.test_main import _run

ROOT = Path(__file__).resolve().parents[2]
SPLIT = """
deployable OrderDesk { contexts: Orders }
deployable Warehouse { contexts: Inventory, Payment }
"""


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "shop.loom"
    model.write_text((ROOT / "examples/shop/shop.loom").read_text() + SPLIT)
    return model


@pytest.mark.parametrize("module", ["loom", "loom.cli"])
def test_one_package_per_deployable(tmp_path: Path, module: str) -> None:
    _model(tmp_path)
    code, out, err = _run(module, ["build", "shop.loom", "-o", "out"], tmp_path)
    assert code == 0, err
    assert out.splitlines()[1:] == [
        "  out/order_desk: deployable OrderDesk (Orders)",
        "  out/warehouse: deployable Warehouse (Inventory, Payment)",
    ]
    root = tmp_path / "out"
    assert sorted(p.name for p in root.iterdir()) == [MARKER, "order_desk", "warehouse"]
    desk, warehouse = root / "order_desk", root / "warehouse"
    assert (desk / "orders" / "tables.py").is_file() and not (desk / "payment/tables.py").exists()
    assert (desk / "payment" / "domain.py").is_file()  # Payment's contract: its events
    assert (warehouse / "payment" / "tables.py").is_file()
    assert not (warehouse / "orders" / "tables.py").exists()
    assert 'CONTEXTS = ("Inventory", "Payment")' in (warehouse / "main.py").read_text()


def test_each_package_serves_its_own_routes_and_a_rebuild_replaces_them(tmp_path: Path) -> None:
    model = _model(tmp_path)
    result = compile_sources({str(model): model.read_text()})
    assert result.model is not None
    out = tmp_path / "out"
    build_model(result.model, out)
    paths = {
        name: set(load_app(out / name, f"sqlite:///{tmp_path / name}.db").openapi()["paths"])
        for name in ("order_desk", "warehouse")
    }
    assert "/api/orders" in paths["order_desk"] and "/api/charges" not in paths["order_desk"]
    assert "/api/charges" in paths["warehouse"] and "/api/orders" not in paths["warehouse"]
    # without the declarations the same folder holds the one package of the whole model again
    whole = compile_sources({str(model): (ROOT / "examples/shop/shop.loom").read_text()})
    assert whole.model is not None
    build_model(whole.model, out)
    assert not (out / "order_desk").exists() and (out / "main.py").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "shop.loom"]
