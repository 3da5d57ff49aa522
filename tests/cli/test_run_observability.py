"""`loom run` serves the health endpoints and `GET /metrics` by default, and `--no-metrics` turns
the metrics off; `--log-format text` writes one readable line per fact, uvicorn's lines in the same
layout (docs/observability.md, docs/cli.md)."""

from __future__ import annotations

import re
import shutil
import time
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


def test_loom_run_log_format_text_writes_one_readable_line_per_fact(
    tmp_path: Path, database_url: str
) -> None:
    model = tmp_path / "stock.loom"
    shutil.copy(MODEL, model)
    log = tmp_path / "run.log"
    # --color always: coloured though it writes to a file (`loom up` shows it uncoloured there)
    args = (str(model), "--database-url", database_url, "--log-format", "text", "--color", "always")
    with running(*args, port=free_port(), log_path=log) as base:
        item = httpx.post(f"{base}/api/items", json={"name": "lamp"}).json()["id"]
        r = httpx.post(f"{base}/api/workflows/look", json={"item": item})
        assert r.status_code < 300, r.text
        deadline = time.monotonic() + 30
        while "event_handled" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    said = log.read_text()
    print(said)
    # the level and the fact in colour, nothing else
    assert "\033[32mINFO \033[0m \033[1mevent_handled\033[0m Stock.Looks" in said
    lines = re.sub(r"\033\[[0-9;]*m", "", said).splitlines()
    clock = r"\d\d:\d\d:\d\d\.\d{3}"
    handled = [x for x in lines if " event_handled " in x]
    # the time, the level, the fact, what it is about, then its members as key=value
    assert re.fullmatch(
        rf"{clock} INFO  event_handled Stock\.Looks\S* Stock\.Looked id=\S+ corr=\S+( \S+=\S+)*",
        handled[0],
    ), handled
    # uvicorn's own lines, the access line too, in the same layout; no JSON line
    assert any(re.fullmatch(rf"{clock} INFO  Application startup complete\.", x) for x in lines)
    assert any(re.match(rf'{clock} INFO  127\.0\.0\.1:\d+ - "POST /api/items', x) for x in lines)
    assert not any(x.startswith("{") for x in lines)
