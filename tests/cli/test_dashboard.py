"""`loom dashboard FILE... -o grafana.json` (docs/observability.md#dashboard): writes the model's
dashboard, the same file for the same model; a model with errors writes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from loom.codegen.grafana import dashboard_json
from tests.codegen.test_grafana import SHOP, model


def loom_dashboard(model_file: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom.cli", "dashboard", str(model_file), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_writes_the_same_file_for_the_same_model(tmp_path: Path) -> None:
    out = tmp_path / "grafana.json"
    for _ in range(2):
        r = loom_dashboard(SHOP, out)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"wrote {out}" in r.stdout
        assert out.read_text() == dashboard_json(model(SHOP))
    json.loads(out.read_text())


def test_a_model_with_errors_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.loom"
    bad.write_text("context Broken { aggregate A { x: nosuchtype } }\n")
    out = tmp_path / "grafana.json"
    r = loom_dashboard(bad, out)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()
