"""What `loom run` of a model built before has loaded once it served its first request: what the
model uses, not every subsystem Loom has (docs/benchmarks.md, the start of `loom run`). Each
module a start stopped importing is named here, so that it cannot creep back.

The server is a real `loom run`, in a child process; after its first 200, a signal makes it write
the names of its loaded modules.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from loom.cli.output import Color
from loom.cli.serve import SERVING_THRESHOLD, _build
from loom.serving.held import Held
from tests.liveserver import free_port, stop
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
BANKING = ROOT / "examples/banking/banking.loom"
SCHEDULING = ROOT / "examples/scheduling/scheduling.loom"

# `loom run ARGS`, writing its modules' names and its collector's state to the file argv[1] on
# SIGUSR1 (written whole, then renamed: the test never reads half a list)
SERVE = """
import gc, json, signal, sys
from pathlib import Path

out = Path(sys.argv[1])

def dump(signum, frame):
    from loom.runtime.service.service import Service

    facts = {
        "modules": sorted(sys.modules),
        "threshold": gc.get_threshold(),
        "frozen": gc.get_freeze_count(),
        # the services the collector walks (`gc.get_objects` lists no frozen object)
        "services_walked": sum(isinstance(o, Service) for o in gc.get_objects()),
    }
    out.with_suffix(".part").write_text(json.dumps(facts))
    out.with_suffix(".part").replace(out)

signal.signal(signal.SIGUSR1, dump)
sys.argv = ["loom", "run", *sys.argv[2:]]
from loom.cli.main import main
main()
"""

# what the banking model (no channel, no process, no API resource, no metrics scrape, tracing
# off) does not use, and its start loaded before: module -> why it is not needed
NOT_LOADED = {
    # a reused build is not compiled again
    "loom.lang.compiler": "the compiler",
    "loom.lang.syntax": "the parser",
    "loom.model.ir": "the compiler's IR",
    "loom.codegen": "the code generator",
    # the runtime's face loads a name's module on first use (`loom.runtime.__getattr__`)
    "loom.runtime.processes": "processes, timeouts and context timers",
    "loom.runtime.http.timer_admin": "the timer admin routes (a service with processes)",
    "loom.runtime.http.admin": "the dead-letter routes (a service with channels or processes)",
    "loom.runtime.http.dead_letter_admin": "the dead letters in bulk (idem)",
    "loom.runtime.http.outbox_admin": "the outbox's routes (idem)",
    "loom.runtime.http.audit": "the admin actions' audit log (idem)",
    "loom.runtime.http.model_admin": "the counts on the model's diagrams (idem)",
    "loom.runtime.http.process_admin": "the process instances' routes (a service with processes)",
    # the migration check of a database with no migrations folder
    "loom.migrate.diff": "the diff of snapshots (a migrations folder)",
    "loom.migrate.steps": "the migration steps (a migrations folder)",
    "loom.migrate.plan": "the plan of a change (a database that differs)",
    "alembic": "the migrations' operations (applying one)",
    # on demand only
    "prometheus_client": "the metrics' text format (the first scrape of /metrics)",
    "httpx": "calls of another deployable's API",
    "nats": "a NATS broker",
    "redis": "a Redis broker",
    "jinja2": "templates (the console's pages, on its first request)",
    "loom.runtime.http.console.routes": "the web console's pages (its first request)",
    # tracing is off without an endpoint (docs/observability.md#traces)
    "loom.runtime.values.traces": "Loom's OpenTelemetry half",
    "opentelemetry.sdk": "OpenTelemetry's SDK",
    "opentelemetry.exporter": "the OTLP exporter",
}


def _serve_and_list(
    model: Path, database_url: str, tmp_path: Path, probe: str = "/api/accounts"
) -> tuple[set[str], str]:
    """`loom run` of `model`, with no OTEL_* nor LOOM_* variable: the modules it has loaded once
    it answered GET `probe` with a 200, and its output."""
    facts, output = _serve_and_dump(model, database_url, tmp_path, probe)
    return set(facts["modules"]), output


def _serve_and_dump(
    model: Path, database_url: str, tmp_path: Path, probe: str = "/api/accounts"
) -> tuple[dict[str, Any], str]:
    """`loom run` of `model`, with no OTEL_* nor LOOM_* variable: what `SERVE` writes once it
    answered GET `probe` with a 200, and its output."""
    port = free_port()
    listed = tmp_path / "modules.json"
    log = tmp_path / "server.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "LOOM_"))}
    args = [str(listed), str(model), "--port", str(port), "--database-url", database_url]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, *args],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**env, "PYTHONUNBUFFERED": "1"},
        )
        try:

            def answered() -> bool:
                if proc.poll() is not None:
                    pytest.fail(f"loom run stopped:\n{log.read_text()}")
                try:
                    url = f"http://127.0.0.1:{port}{probe}"
                    return httpx.get(url, timeout=5).status_code == 200
                except httpx.HTTPError:
                    return False

            wait_until(answered, timeout=60, what=f"loom run answering GET {probe}")
            proc.send_signal(signal.SIGUSR1)
            wait_until(listed.exists, timeout=30, what="loom run listing its modules")
            facts: dict[str, Any] = json.loads(listed.read_text())
        finally:
            stop(proc)
    return facts, log.read_text()


def _under(loaded: set[str], package: str) -> list[str]:
    return sorted(m for m in loaded if m == package or m.startswith(f"{package}."))


def test_loom_run_of_a_reused_build_serves_without_what_its_model_does_not_use(
    tmp_path: Path, database_url: str
) -> None:
    model = tmp_path / "banking.loom"
    model.write_text(BANKING.read_text())
    _build([model], Color.never, Held())  # the build the server reuses
    loaded, output = _serve_and_list(model, database_url, tmp_path)
    assert "build: reused" in output, output
    assert "  console: http://127.0.0.1:" in output, output  # served, not yet loaded
    # what it did load is listed: the runtime, the generated package, the migration check
    assert {"loom.runtime.service.app", "loom.migrate.serve", "uvicorn"} <= loaded
    assert any(m.startswith("loom_service_banking") for m in loaded)
    found = {package: _under(loaded, package) for package in NOT_LOADED}
    assert not any(found.values()), {
        f"{package} ({NOT_LOADED[package]})": modules
        for package, modules in found.items()
        if modules
    }
    if database_url.startswith("sqlite"):  # PostgreSQL's dialect, for a service on PostgreSQL
        assert _under(loaded, "sqlalchemy.dialects.postgresql") == []
    # OpenTelemetry with tracing off: FastAPI imports its API itself (`fastapi.telemetry`; the
    # API is a dependency of FastAPI's), so a plain FastAPI app loads those modules too; Loom
    # adds none (its SDK, exporter and `values/traces.py` are checked above)
    assert set(_under(loaded, "opentelemetry")) <= _fastapis_own_opentelemetry()


def test_loom_run_serves_with_its_start_out_of_the_collectors_sight(tmp_path: Path) -> None:
    # what the start made (the app, and the service its lifespan made) is frozen, and the
    # collector's first threshold is the serving one (`loom.cli.serve.made_to_serve`)
    model = tmp_path / "banking.loom"
    model.write_text(BANKING.read_text())
    facts, output = _serve_and_dump(model, f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path)
    assert facts["frozen"] > 0, output
    assert facts["services_walked"] == 0, output
    assert facts["threshold"][0] == SERVING_THRESHOLD, output


def _fastapis_own_opentelemetry() -> set[str]:
    """The OpenTelemetry modules a plain FastAPI app with one route has loaded once it answered."""
    plain = subprocess.run(
        [sys.executable, "-c", PLAIN_APP],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
    )
    return set(json.loads(plain.stdout.splitlines()[-1]))


# a plain FastAPI app with one route, answering one request in process (the test client)
PLAIN_APP = """
import json, sys
from fastapi import FastAPI
from fastapi.testclient import TestClient

app = FastAPI()

@app.get("/ping")
async def ping() -> dict[str, str]:
    return {"ok": "yes"}

with TestClient(app) as client:
    assert client.get("/ping").status_code == 200
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")))
"""


def test_a_service_with_processes_on_sqlite_loads_no_postgresql_dialect(tmp_path: Path) -> None:
    """Its timers' upserts are built for the database it runs on (`storage.dialects`)."""
    model = tmp_path / "scheduling.loom"
    model.write_text(SCHEDULING.read_text())
    loaded, output = _serve_and_list(
        model, f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path, probe="/readyz"
    )
    assert _under(loaded, "loom.runtime.processes"), output  # it does run processes
    assert _under(loaded, "sqlalchemy.dialects.postgresql") == []
