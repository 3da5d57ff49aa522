"""Helpers for the back-end tests: write a generated tree, run ruff on it, import it, snapshots."""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import subprocess
import sys
from pathlib import Path
from types import ModuleType

SNAPSHOTS = Path(__file__).parent / "snapshots"
ROOT = Path(__file__).resolve().parents[2]
_counter = itertools.count()


def write_tree(files: dict[str, str], out: Path) -> Path:
    for rel, text in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
    return out


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "ruff"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "ruff"]
    return subprocess.run([*cmd, *args], capture_output=True, text=True, check=False)


def mypy_strict(folder: Path, package: str) -> subprocess.CompletedProcess[str]:
    """`mypy --strict` over the generated package `folder/package`."""
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", package],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,  # the caller's assertion shows mypy's findings
    )


def import_generated(out: Path) -> ModuleType:
    """Import the package in `out` under a fresh unique name; return its `main` module."""
    name = f"loom_codegen_test_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(
        name, out / "__init__.py", submodule_search_locations=[str(out)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.main")


def check_snapshots(name: str, files: dict[str, str], update: bool) -> None:
    """Compare `files` byte for byte with tests/codegen/snapshots/<name>/ (or rewrite them)."""
    folder = SNAPSHOTS / name
    existing = (
        {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
        if folder.exists()
        else set()
    )
    if update:
        for stale in existing - set(files):
            (folder / stale).unlink()
        write_tree(files, folder)
        return
    assert folder.exists(), f"no snapshots for {name}: run pytest with --update-snapshots"
    assert sorted(existing) == sorted(files), f"generated files differ from snapshots/{name}"
    for rel, text in files.items():
        expected = (folder / rel).read_bytes().decode("utf-8")
        assert text == expected, f"snapshots/{name}/{rel} differs (run with --update-snapshots)"
