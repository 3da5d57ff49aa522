"""`loom check DIR`, `build DIR` and `run DIR` read a folder as its `*.loom` files (one model), as
`dead-letters` does; a folder without one is a sentence and exit code 2. Run as a user runs them:
a subprocess, as `python -m loom` and `python -m loom.cli`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.liveserver import free_port, running

ROOT = Path(__file__).resolve().parents[2]
SALES = ROOT / "examples/sales"


def loom(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    model = tmp_path / "sales"
    model.mkdir()
    for f in (
        p for p in SALES.glob("*.loom") if p.is_file()
    ):  # two files: sales.loom and onboarding.loom
        shutil.copy(f, model / f.name)
    return model


@pytest.mark.parametrize("module", ["loom", "loom.cli"])
def test_check_and_build_take_a_folder(folder: Path, tmp_path: Path, module: str) -> None:
    r = loom(module, "check", str(folder))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok: 2 file(s), no problems" in r.stdout
    r = loom(module, "build", str(folder), "-o", str(tmp_path / "out"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "out" / "main.py").is_file()


@pytest.mark.parametrize("module", ["loom", "loom.cli"])
def test_a_folder_without_a_model_is_a_sentence(tmp_path: Path, module: str) -> None:
    for command in (["check"], ["build", "-o", str(tmp_path / "out")]):
        r = loom(module, *command, str(tmp_path))
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"error: no .loom file in {tmp_path}" in r.stderr
        assert "Traceback" not in r.stderr


def test_run_serves_a_folder(folder: Path) -> None:
    with running(str(folder), port=free_port()) as base:
        paths = httpx.get(f"{base}/openapi.json").json()["paths"]
        # both files' declarations are served: one model
        assert "/api/customers" in paths and "/api/workflows/register_customer" in paths, sorted(
            paths
        )
