"""`loom run` serves the health endpoints and `GET /metrics` by default, and `--no-metrics` turns
the metrics off (docs/observability.md, docs/cli.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.liveserver import free_port, running

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests/e2e/models/durable_autocommit.loom"


def test_loom_run_serves_health_and_metrics_and_no_metrics_turns_them_off(
    tmp_path: Path,
) -> None:
    model = tmp_path / "stock.loom"
    shutil.copy(MODEL, model)
    with running(str(model), port=free_port()) as base:
        assert httpx.get(f"{base}/healthz").json() == {"status": "ok"}
        assert httpx.get(f"{base}/readyz").json() == {"status": "ready"}
        assert httpx.post(f"{base}/api/items", json={"name": "lamp"}).status_code == 201
        r = httpx.get(f"{base}/metrics")
        assert r.status_code == 200, r.text
        names = {f.name for f in text_string_to_metric_families(r.text)}
        assert {"loom_http_requests", "loom_outbox_pending", "loom_db_pool_in_use"} <= names
    with running(str(model), "--no-metrics", port=free_port()) as base:
        assert httpx.get(f"{base}/metrics").status_code == 404
        assert httpx.get(f"{base}/readyz").status_code == 200
