"""The awkward cases of `edge_ir.py`: the output stays formatted, lint-clean and works over HTTP."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from loom.codegen.python import generate
from tests.codegen.edge_ir import edge_model
from tests.codegen.util import check_snapshots, import_generated, ruff, write_tree


@pytest.fixture
def edge_dir(tmp_path: Path) -> Path:
    return write_tree(generate(edge_model()), tmp_path / "edge")


def test_edge_snapshots(update_snapshots: bool) -> None:
    check_snapshots("hand_edge", generate(edge_model()), update_snapshots)


@pytest.mark.parametrize("line_length", ["88", "100"])
def test_edge_formatted(edge_dir: Path, line_length: str) -> None:
    done = ruff(
        "format", "--isolated", "--line-length", line_length, "--check", "--diff", str(edge_dir)
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_edge_lint_clean(edge_dir: Path) -> None:
    done = ruff(
        "check", "--isolated", "--select", "F,E9", "--output-format", "concise", str(edge_dir)
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_edge_names() -> None:
    files = generate(edge_model())
    domain = files["catalog/domain.py"]
    assert "from_: str" in domain and "def reprice(self, class_: Decimal)" in domain
    assert 'price: Decimal = Decimal("0.00")' in domain
    assert "return decimals.mul(self.price, 2)" in domain
    assert (
        'Column("from", String, nullable=False, info={"loom": {"field": "from"}})'
        in (files["catalog/tables.py"])
    )
    assert 'from_: WireText = Field(alias="from")' in files["catalog/schemas.py"]
    assert "class BoxRepository(Repository[Box])" in files["catalog/repositories.py"]
    assert "from ..catalog.ids import BoxId" in files["shipping/domain.py"]
    assert 'service.transaction(isolation="read_committed")' in files["catalog/workflows.py"]


async def test_edge_http(edge_dir: Path, tmp_path: Path) -> None:
    app = import_generated(edge_dir).build_app(f"sqlite+aiosqlite:///{tmp_path / 'edge.db'}")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
            r = await client.post("/api/workflows/ping")
            assert r.status_code == 204, r.text
            r = await client.post("/api/workflows/make_box", json={"from": "here", "price": "1.25"})
            assert r.status_code == 200, r.text
            assert Decimal(r.json()) == Decimal("2.50")
            r = await client.get("/api/boxes")
            box = r.json()["items"][0]
            assert box["from"] == "here" and box["shipBy"] is None and box["colors"] == []
            assert Decimal(box["price"]) == Decimal("1.25")
            r = await client.post(f"/api/boxes/{box['id']}/reprice", json={"class": "-1"})
            assert r.status_code == 422 and r.json()["rule"] == "Box: invariant price >= 0"
            r = await client.post(f"/api/boxes/{box['id']}/reprice", json={"class": 3})
            assert r.status_code == 204, r.text
            r = await client.get(f"/api/boxes/{box['id']}")
            assert Decimal(r.json()["total"]) == Decimal(6)
            r = await client.post(f"/api/boxes/{box['id']}/touch")
            assert r.status_code == 204
            r = await client.post("/api/workflows/ship", json={"box": box["id"]})
            assert r.status_code == 200, r.text
            r = await client.get(f"/api/parcels/{r.json()}")
            assert r.json()["label"] == "xy" and r.json()["box"] == box["id"]
