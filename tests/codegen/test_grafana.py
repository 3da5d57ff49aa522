"""The Grafana dashboard of a model (docs/observability.md#dashboard) is valid dashboard JSON
(checked against the shape Grafana imports), has a row per context and a panel per channel and per
process, and queries only the metrics a service exposes (docs/observability.md's table). The
command itself is tests/cli/test_dashboard.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema_rs

from loom.codegen.grafana import dashboard
from loom.lang import compile_files
from loom.model import ir

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "tests/runtime/broker/shop.loom"
DESK = ROOT / "tests/e2e/models/desk_timers.loom"

_TARGET = {
    "type": "object",
    "required": ["refId", "expr", "datasource"],
    "properties": {"refId": {"type": "string", "pattern": "^[A-Z]$"}, "expr": {"type": "string"}},
}
_GRID = {
    "type": "object",
    "required": ["x", "y", "w", "h"],
    "properties": {
        "x": {"type": "integer", "minimum": 0, "maximum": 23},
        "y": {"type": "integer", "minimum": 0},
        "w": {"type": "integer", "minimum": 1, "maximum": 24},
        "h": {"type": "integer", "minimum": 1},
    },
}
# the members Grafana's import needs, with their types (its dashboard JSON model)
SCHEMA = {
    "type": "object",
    "required": ["title", "uid", "schemaVersion", "panels", "templating", "time"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "uid": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,40}$"},
        "schemaVersion": {"type": "integer", "minimum": 36},
        "time": {"type": "object", "required": ["from", "to"]},
        "templating": {
            "type": "object",
            "required": ["list"],
            "properties": {
                "list": {"type": "array", "items": {"type": "object", "required": ["name", "type"]}}
            },
        },
        "panels": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "type", "title", "gridPos"],
                "properties": {
                    "id": {"type": "integer", "minimum": 1},
                    "type": {"enum": ["row", "timeseries"]},
                    "gridPos": _GRID,
                    "targets": {"type": "array", "minItems": 1, "items": _TARGET},
                },
                "if": {"properties": {"type": {"const": "timeseries"}}},
                "then": {"required": ["targets", "datasource"]},
            },
        },
    },
}


def model(*files: Path) -> ir.Model:
    result = compile_files(list(files))
    assert result.ok and result.model is not None, result.diagnostics
    return result.model


def documented_metrics() -> set[str]:
    table = (ROOT / "docs/observability.md").read_text()
    return set(re.findall(r"^\| `(loom_\w+)` \|", table, re.MULTILINE))


def queried_metrics(board: dict[str, Any]) -> set[str]:
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", ())]
    found = {m for e in exprs for m in re.findall(r"\b(loom_\w+)", e)}
    # a histogram is queried by its buckets
    return {re.sub(r"_bucket$", "", m) for m in found}


def test_the_dashboard_is_valid_and_laid_out_after_the_model() -> None:
    board = dashboard(model(SHOP, DESK))
    jsonschema_rs.validator_for(SCHEMA).validate(board)
    panels = board["panels"]
    assert [p["id"] for p in panels] == list(range(1, len(panels) + 1))
    rows = [p["title"] for p in panels if p["type"] == "row"]
    assert rows == ["Service", "Context Orders", "Context Inventory", "Context Desk"]
    titles = [p["title"] for p in panels]
    for wanted in (
        "Channel Orders.Placed: lag",
        "Channel Inventory.Reserved: lag",
        "Process Desk.FollowUp: instances",
    ):
        assert wanted in titles
    lag = next(p for p in panels if p["title"] == "Channel Orders.Placed: lag")
    assert 'loom_outbox_oldest_age_seconds{channel="Orders.Placed"' in lag["targets"][0]["expr"]
    # no two panels overlap on the grid
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not cells & mine, p["title"]
        cells |= mine
    assert queried_metrics(board) <= documented_metrics(), queried_metrics(board)
