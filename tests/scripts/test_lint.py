"""scripts/lint.sh fails on a finding and names the failed step; scripts/test.sh runs it after setup
and runs no test when it fails.

Each runs as a copy in a scratch tree (the repository's pyproject.toml, the typed packages as empty
stubs, the running virtualenv linked in as .venv), so a finding can be planted without touching the repo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    *("runtime", "testing", "codegen", "model", "migrate", "lang", "codemod"),
    *("cli", "build", "serving"),
    # the runtime's layers, which its import contract names
    *(f"runtime/{layer}" for layer in ("values", "storage", "messaging", "processes", "http")),
    "runtime/service",
)
# the scripts run the tools of the project's virtualenv: the one running these tests
VENV = Path(sys.prefix)
pytestmark = pytest.mark.skipif(
    not all((VENV / "bin" / tool).exists() for tool in ("ruff", "mypy")),
    reason="the tests do not run in a virtualenv with ruff and mypy",
)


def _tree(tmp: Path) -> Path:
    (tmp / "scripts").mkdir()
    for script in ("lint.sh", "test.sh"):
        shutil.copy(ROOT / "scripts" / script, tmp / "scripts" / script)
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    for pkg in PACKAGES:
        (tmp / "src/loom" / pkg).mkdir(parents=True)
        (tmp / "src/loom" / pkg / "__init__.py").write_text('"""A stub."""\n')
    (tmp / "src/loom/__init__.py").write_text('"""A stub."""\n')
    for folder in ("tests", "bench"):
        (tmp / folder).mkdir()
        (tmp / folder / "__init__.py").write_text('"""A stub."""\n')
    os.symlink(VENV, tmp / ".venv")
    return tmp


def _run(tree: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", f"scripts/{script}", "-q"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the exit code is what the tests assert
    )


def test_lint_passes_on_a_clean_tree(tmp_path: Path) -> None:
    run = _run(_tree(tmp_path), "lint.sh")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lint: all checks passed" in run.stdout


def test_lint_names_each_failed_step(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    # an unused import (ruff check), a badly formatted line (ruff format), an untyped function
    # in a strictly typed package (mypy --strict)
    (tree / "src/loom/model/bad.py").write_text("import os\nx  =  1\ndef f(a): return a\n")
    run = _run(tree, "lint.sh")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "lint failed in 3 step(s)" in run.stderr
    for step in ("ruff check", "ruff format --check", "mypy --strict"):
        assert f"  - {step}" in run.stderr


def test_lint_holds_the_benches_to_strict_types(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "bench/untyped.py").write_text('"""A bench."""\n\n\ndef f(a):\n    return a\n')
    run = _run(tree, "lint.sh")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "lint failed in 1 step(s):\n  - mypy --strict (bench/)" in run.stderr


def test_lint_checks_the_layout_of_the_tracked_loom_files_but_the_skipped(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    (tree / "messy.loom").write_text("context A {\n      event E { n: int }\n}\n")
    (tree / "bad.loom").write_text("context A {\n")  # does not parse: listed in the skip file
    (tree / "scripts/fmt-skip.txt").write_text("# skipped\n^bad\\.loom$\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tree, check=True)
    subprocess.run([*git, "add", "messy.loom", "bad.loom"], cwd=tree, check=True)
    run = _run(tree, "lint.sh")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "lint failed in 1 step(s)" in run.stderr
    assert "  - loom fmt --check (*.loom)" in run.stderr
    assert "messy.loom" in run.stdout and "bad.loom" not in run.stdout + run.stderr


def test_test_script_stops_before_the_tests_on_a_lint_failure(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    # setup is the real script's job elsewhere; here the linked virtualenv is already set up
    (tree / "scripts/setup.sh").write_text("#!/usr/bin/env bash\n")
    (tree / "tests/test_never.py").write_text(
        'def test_never() -> None:\n    raise AssertionError("ran")\n'
    )
    (tree / "src/loom/lang/bad.py").write_text("import os\n")
    run = _run(tree, "test.sh")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "lint or type checks failed" in run.stderr
    assert "test_never" not in run.stdout + run.stderr
