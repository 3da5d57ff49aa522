"""`loom run --api CONTEXT=URL` and `loom up`'s wiring of the deployables' URLs: where a service
finds the contexts it calls through a `resource { kind: api }`, and the refusal without one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loom.cli.up import plan
from loom.lang import compile_files
from loom.model.deployables import deployables_of
from loom.serving.connections import parse_apis, set_apis
from loom.serving.held import OptionError
from tests.liveserver import free_port

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests/runtime/api_calls"
FILES = ["dispatch.loom", "deployables.loom"]
SHOP = ["shop.loom", "deployables.loom"]


def _copy(tmp_path: Path) -> list[Path]:
    return [Path(shutil.copy(MODEL / name, tmp_path / name)) for name in FILES]


def test_api_values_set_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_API_DIRECTORY", "http://old:1")  # restored at the test's end
    set_apis(["Directory=http://127.0.0.1:8001"])
    assert os.environ["LOOM_API_DIRECTORY"] == "http://127.0.0.1:8001"
    assert parse_apis(["Dispatch = https://desk.example/base"]) == {
        "Dispatch": "https://desk.example/base"
    }
    for bad in ("Directory", "Directory=nats://x:1", "=http://x:1", "Dir ectory=http://x:1"):
        with pytest.raises(OptionError, match="expected CONTEXT=URL"):
            parse_apis([bad])
    with pytest.raises(OptionError, match="context directory twice"):
        parse_apis(["Directory=http://a:1", "directory=http://b:1"])


def test_up_gives_each_deployable_its_siblings_urls(tmp_path: Path) -> None:
    files = _copy(tmp_path)
    result = compile_files([str(f) for f in files])
    assert result.model is not None
    declared = {d.name: d.contexts for d in deployables_of(result.model)}
    desk, people = plan(files, result.model, declared, 8100)
    assert (desk.name, people.name) == ("Desk", "People")
    units = [desk, people]
    assert "--api=Directory=http://127.0.0.1:8101" in desk.command(files, [], units)
    assert "--api=Dispatch=http://127.0.0.1:8100" in people.command(files, [], units)
    assert not [a for a in desk.command(files, [], units) if a.startswith("--api=Dispatch")]


def _run(files: list[Path], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOM_API_", "LOOM_BROKER"))}
    return subprocess.run(
        [sys.executable, "-m", "loom.cli", "run", *map(str, files), *args]
        + ["--port", str(free_port())],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        env=env,
    )


def test_run_without_the_url_refuses_before_its_banner_naming_the_variable_and_flag(
    tmp_path: Path,
) -> None:
    done = _run(_copy(tmp_path), "--deployable", "Desk")
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "error: context Directory (bound by resource Dispatch.directory) runs in another "
        "deployable and no URL is given for it: set LOOM_API_DIRECTORY=URL or pass "
        "--api Directory=URL"
    ]


def test_run_without_the_broker_refuses_before_its_banner_one_line_per_source(
    tmp_path: Path,
) -> None:
    """The shop's Orders deployable needs a broker for its channels (all of the default source):
    one line, not one clause per crossing event, and no `serving …` banner."""
    files = [Path(shutil.copy(ROOT / "examples/shop" / n, tmp_path / n)) for n in SHOP]
    done = _run(files, "--deployable", "Orders")
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        "error: channels Orders.Fulfilment, Inventory.Stock, Payment.Payments must carry events "
        "between deployables (Orders.OrderPlaced (produced here) to "
    ), line
    assert line.endswith(
        "and no broker is configured for them: give one with --broker URL or LOOM_BROKER=URL"
    ), line
    assert not (tmp_path / "orders.db").exists()  # refused before the database
