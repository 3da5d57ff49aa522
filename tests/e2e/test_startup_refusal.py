"""The generated service started directly (uvicorn, as in production) on a database it cannot
serve: it exits at start-up with the reason alone, never a traceback, and never answers a request."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BANKING = ROOT / "examples/banking/banking.loom"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("build")
    loom = Path(sys.executable).with_name("loom")
    subprocess.run([str(loom), "build", str(BANKING), "-o", str(out / "bank")], check=True)
    return out


def start(package: Path, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOM_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "uvicorn", "--factory", "bank.main:build_app"]
        + ["--app-dir", str(package), "--port", "0"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_database_behind_the_model_is_refused_without_a_traceback(
    package: Path, tmp_path: Path
) -> None:
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:  # the table as an older model had it: one column only
        conn.execute("CREATE TABLE banking_accounts (id TEXT PRIMARY KEY)")
    run = start(package, f"sqlite+aiosqlite:///{db}")
    assert run.returncode != 0
    assert "column banking_accounts.balance is missing" in run.stderr
    assert "loom migrate apply" in run.stderr
    assert "Traceback" not in run.stderr, run.stderr


def test_an_unreachable_database_is_one_line(package: Path) -> None:
    run = start(package, "postgresql://ann:secret@127.0.0.1:1/bank")
    assert run.returncode != 0
    assert "cannot connect to the database postgresql://ann:***@127.0.0.1:1/bank" in run.stderr
    assert "secret" not in run.stderr
    assert "Traceback" not in run.stderr, run.stderr
