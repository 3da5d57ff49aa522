"""Every view of every example, in Mermaid and DOT, against golden files
(tests/codegen/snapshots/diagrams/<example>/; `pytest --update-snapshots` rewrites them), and
Graphviz draws each DOT golden file without a complaint.

Graphviz is Debian's `graphviz` (scripts/setup.sh installs it); without `dot` the drawing tests
skip, unless under CI or LOOM_REQUIRE_GRAPHVIZ=1 (scripts/test.sh), where they fail."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from loom.build.sources import model_files
from loom.codegen.diagrams import RENDERERS, VIEWS, diagram
from loom.lang import compile_files
from loom.model import ir
from tests.codegen.util import ROOT, SNAPSHOTS, check_snapshots

EXAMPLES = sorted(p.name for p in (ROOT / "examples").iterdir() if list(p.glob("*.loom")))
SUFFIX = {"mermaid": "mmd", "dot": "dot"}
_REQUIRE_GRAPHVIZ = os.environ.get("CI", "").lower() in {"1", "true", "yes"} or bool(
    os.environ.get("LOOM_REQUIRE_GRAPHVIZ")
)


def example(name: str) -> ir.Model:
    """The example folder `name` as one model, as `loom diagram examples/<name>` reads it."""
    result = compile_files(model_files([ROOT / "examples" / name]))
    assert result.model is not None, [d.message for d in result.diagnostics]
    return result.model


def drawings(model: ir.Model) -> dict[str, str]:
    """Every view in every text format: `context.mmd`, `context.dot`, …"""
    return {
        f"{view}.{SUFFIX[fmt]}": diagram(model, view, fmt) for view in VIEWS for fmt in RENDERERS
    }


def test_there_are_examples_and_every_format_has_a_suffix() -> None:
    assert "shop" in EXAMPLES and set(SUFFIX) == set(RENDERERS)


@pytest.mark.parametrize("name", EXAMPLES)
def test_golden(name: str, update_snapshots: bool) -> None:
    model = example(name)
    files = drawings(model)
    check_snapshots(f"diagrams/{name}", files, update_snapshots)
    assert drawings(model) == files  # the same model, the same text


def graphviz() -> str:
    exe = shutil.which("dot")
    if exe is None:
        message = "Graphviz's `dot` is missing: run `bash scripts/setup.sh test` (it installs it)"
        if _REQUIRE_GRAPHVIZ:
            pytest.fail(message)
        pytest.skip(message)
    return exe


DOT_GOLDEN = sorted((SNAPSHOTS / "diagrams").glob("*/*.dot"))


def test_every_example_has_dot_golden_files() -> None:
    assert {p.parent.name for p in DOT_GOLDEN} == set(EXAMPLES)


@pytest.mark.parametrize("path", DOT_GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_graphviz_draws_the_golden_file(path: Path) -> None:
    done = subprocess.run(
        [graphviz(), "-Tsvg"],
        input=path.read_text(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert "<svg" in done.stdout
