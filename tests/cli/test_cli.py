"""The `loom` command, run as a user runs it: a subprocess, its exit code and its output."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.liveserver import free_port as _free_port
from tests.liveserver import running

ROOT = Path(__file__).resolve().parents[2]
BANKING = ROOT / "examples/banking/banking.loom"
LOOM = [sys.executable, "-m", "loom.cli"]


def loom(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOM, *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )


BROKEN = """\
context Shop {
  aggregate Item {
    name: string
    operation rename(n: int) {
      name := n
    }
  }
}
"""


def test_check_accepts_the_examples() -> None:
    r = loom("check", str(BANKING))
    assert r.returncode == 0, r.stdout + r.stderr
    r = loom("check", "examples/sales/sales.loom", "examples/sales/onboarding.loom")
    assert r.returncode == 0, r.stdout + r.stderr


def test_check_reports_errors_like_a_compiler(tmp_path: Path) -> None:
    model = tmp_path / "shop.loom"
    model.write_text(BROKEN)
    r = loom("check", str(model), "--color", "never")
    assert r.returncode == 1
    out = r.stdout + r.stderr
    assert re.search(r"shop\.loom:5:\d+: error\[loom\.type-mismatch\]", out), out
    assert "name := n" in out and "^" in out
    assert "Traceback" not in out


def test_check_json_format(tmp_path: Path) -> None:
    model = tmp_path / "shop.loom"
    model.write_text(BROKEN)
    r = loom("check", str(model), "--format", "json")
    assert r.returncode == 1
    diags = json.loads(r.stdout)
    assert [d["code"] for d in diags] == ["loom.type-mismatch"]
    assert diags[0]["line"] == 5 and diags[0]["severity"] == "error"


def test_check_missing_file_is_a_sentence(tmp_path: Path) -> None:
    r = loom("check", str(tmp_path / "nope.loom"))
    assert r.returncode == 1
    assert "loom.file-unreadable" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_build_is_deterministic_and_guards_foreign_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "one" / "bank", tmp_path / "two" / "bank"
    assert loom("build", str(BANKING), "-o", str(first)).returncode == 0
    assert loom("build", str(BANKING), "-o", str(second)).returncode == 0
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files and files == sorted(
        p.relative_to(second) for p in second.rglob("*") if p.is_file()
    )
    for rel in files:
        assert (first / rel).read_bytes() == (second / rel).read_bytes(), rel
    # A rebuild replaces its own output; a folder Loom did not write is left alone.
    assert loom("build", str(BANKING), "-o", str(first)).returncode == 0
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    r = loom("build", str(BANKING), "-o", str(foreign))
    assert r.returncode == 2 and "refusing" in r.stderr
    assert (foreign / "notes.txt").read_text() == "keep me"


def _copy_model(tmp_path: Path) -> Path:
    model = tmp_path / "bank.loom"
    model.write_text(BANKING.read_text())
    return model


def test_run_serves_sqlite_beside_the_model_and_keeps_data(tmp_path: Path) -> None:
    model = _copy_model(tmp_path)
    port = _free_port()
    with running(str(model), port=port) as base:
        r = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "Ada"})
        assert r.status_code == 200, r.text
        ada = r.json()
    assert (tmp_path / "bank.db").exists()
    with running(str(model), port=port) as base:
        r = httpx.get(f"{base}/api/customers/{ada}")
        assert r.status_code == 200 and r.json()["name"] == "Ada"


@pytest.mark.postgres
def test_run_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    model = _copy_model(tmp_path)
    with running(str(model), "--database-url", postgres_url, port=_free_port()) as base:
        r = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "Ada"})
        assert r.status_code == 200, r.text
        assert httpx.get(f"{base}/api/customers/{r.json()}").json()["name"] == "Ada"
    assert not (tmp_path / "bank.db").exists()


def test_run_refuses_a_broken_model(tmp_path: Path) -> None:
    model = tmp_path / "shop.loom"
    model.write_text(BROKEN)
    r = loom("run", str(model), "--port", str(_free_port()))
    assert r.returncode == 1
    assert "loom.type-mismatch" in r.stderr


def test_readme_curl_session_works_as_printed(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- curl-session -->\s*```bash\n(.*?)```", readme, re.DOTALL)
    assert match, "README.md lost its curl session block"
    script = match.group(1)
    port = _free_port()
    model = _copy_model(tmp_path)
    with running(str(model), port=port):
        r = subprocess.run(
            [
                "bash",
                "-euo",
                "pipefail",
                "-c",
                script.replace("127.0.0.1:8000", f"127.0.0.1:{port}"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert r.returncode == 0, r.stdout + r.stderr
    expected = re.findall(r"^# => (.*)$", script, re.MULTILINE)
    for line in expected:
        assert line.strip() in r.stdout, (line, r.stdout)
