"""`loom diagram FILE... --view V [--format F] [-o OUT]` (docs/diagrams.md), run as a user runs
it: it prints or writes the view the back end draws, says what is wrong in one line (exit 2) and
prints a broken model's diagnostics (exit 1), never a traceback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loom.codegen.diagrams import diagram
from tests.codegen.diagrams.test_examples import example, graphviz

ROOT = Path(__file__).resolve().parents[2]
SHOP = ROOT / "examples/shop"


def loom_diagram(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loom.cli", "diagram", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def said(r: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    return r.stdout + r.stderr


def test_prints_the_view_in_mermaid_by_default_and_in_dot() -> None:
    shop = example("shop")
    r = loom_diagram(str(SHOP), "--view", "context")
    assert r.returncode == 0, said(r)
    assert r.stdout == diagram(shop, "context", "mermaid")
    r = loom_diagram(
        str(SHOP / "shop.loom"),
        str(SHOP / "deployables.loom"),
        "--view",
        "states",
        "--format",
        "dot",
    )
    assert r.returncode == 0, said(r)
    assert r.stdout == diagram(shop, "states", "dot")


def test_writes_the_file_given(tmp_path: Path) -> None:
    out = tmp_path / "deployables.mmd"
    r = loom_diagram(str(SHOP), "--view", "deployables", "-o", str(out))
    assert r.returncode == 0, said(r)
    assert r.stdout == f"wrote {out}\n"
    assert out.read_text() == diagram(example("shop"), "deployables", "mermaid")


def test_svg_is_drawn_by_graphviz(tmp_path: Path) -> None:
    graphviz()
    out = tmp_path / "states.svg"
    r = loom_diagram(str(SHOP), "--view", "states", "--format", "svg", "-o", str(out))
    assert r.returncode == 0, said(r)
    svg = out.read_text()
    assert "<svg" in svg and "Orders.PaymentDeadline" in svg


def test_svg_without_graphviz_names_the_package(tmp_path: Path) -> None:
    # an empty folder as the PATH (the test's Python is run by its full path): no `dot` on it
    env = {**os.environ, "PATH": str(tmp_path)}
    assert shutil.which("dot", path=env["PATH"]) is None
    out = tmp_path / "x.svg"
    r = loom_diagram(str(SHOP), "--view", "context", "--format", "svg", "-o", str(out), env=env)
    assert r.returncode == 2, said(r)
    assert "`graphviz` package" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--view", "states", "--from", "Orders.OrderPlaced"],
            "error: --from narrows the flow view only, not `states`: add --view flow",
        ),
        (
            ["--view", "flow", "--from", "Orders.Nothing"],
            "error: --from Orders.Nothing: the flow has no such event, route or node",
        ),
        (["--view", "nope"], "'nope' is not one of"),
        (["--view", "context", "--format", "png"], "'png' is not one of"),
        ([], "Missing option '--view'"),
    ],
)
def test_a_bad_choice_is_said_in_a_line(args: list[str], message: str) -> None:
    r = loom_diagram(str(SHOP), *args)
    assert r.returncode == 2 and message in said(r), said(r)


def test_a_model_with_errors_prints_its_diagnostics_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.loom"
    bad.write_text("context Broken { aggregate A { x: nosuchtype } }\n")
    out = tmp_path / "context.mmd"
    r = loom_diagram(str(bad), "--view", "context", "-o", str(out))
    assert r.returncode == 1, said(r)
    assert "nosuchtype" in r.stderr and r.stdout == ""
    assert not out.exists()


def test_an_unwritable_output_is_said(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "context.mmd"
    r = loom_diagram(str(SHOP), "--view", "context", "-o", str(out))
    assert r.returncode == 2 and f"error: cannot write {out}" in said(r), said(r)
