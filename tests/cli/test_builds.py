"""Builds on disk: `loom build -o` replaces its folder whole (also the working folder, `-o .`),
and `loom run`'s content-addressed builds are pruned once unused for a day (crashed builds'
temporary folders after an hour)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from loom.build.cache import (
    PRUNE_TEMPORARY_AFTER,
    PRUNE_UNUSED_AFTER,
    cached_build_for,
    reuse_build,
    write_cached_build,
)
from loom.build.package import MARKER
from loom.build.sources import read_model
from loom.lang import compile_sources
from tests.cli.test_replicas import EXTRA, _fresh_folder

ROOT = Path(__file__).resolve().parents[2]
BANKING = ROOT / "examples/banking/banking.loom"


def _build(out: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "loom.cli", "build", str(BANKING), "-o", out]
    return subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=cwd, timeout=120)


def test_a_rebuild_replaces_the_folder_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "bank"
    for _ in range(2):
        r = _build(str(out), tmp_path)
        assert r.returncode == 0, r.stderr
        assert (out / MARKER).is_file() and (out / "main.py").is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bank"]


def test_building_into_the_working_folder_keeps_it(tmp_path: Path) -> None:
    here = tmp_path / "service"
    here.mkdir()
    for _ in range(2):  # into the empty folder, then over its own build
        r = _build(".", here)
        assert r.returncode == 0, r.stderr
        assert (here / MARKER).is_file() and (here / "main.py").is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["service"]
    (here / "notes.txt").write_text("mine")  # a build with a foreign file is still Loom's
    assert _build(".", here).returncode == 0
    assert not (here / "notes.txt").exists()


def test_builds_unused_for_a_day_and_crashed_builds_are_pruned(tmp_path: Path) -> None:
    model = _fresh_folder(tmp_path / "app")
    old, written = cached_build(model)
    assert written and (old / "main.py").is_file()
    day_ago = time.time() - PRUNE_UNUSED_AFTER - 60
    os.utime(old / MARKER, (day_ago, day_ago))
    root = model.parent / ".loom" / "build"
    crashed, writing = root / ".tmp-crashed", root / ".tmp-writing"
    for folder in (crashed, writing):
        (folder / "pkg").mkdir(parents=True)
    hour_ago = time.time() - PRUNE_TEMPORARY_AFTER - 60
    os.utime(crashed, (hour_ago, hour_ago))
    # the same model again: reused, and its use makes it fresh again
    same, written = cached_build(model)
    assert same == old and not written and not crashed.exists() and writing.exists()
    os.utime(old / MARKER, (day_ago, day_ago))
    model.write_text(model.read_text() + EXTRA)
    new, written = cached_build(model)
    assert written and new != old and (new / "main.py").is_file()
    assert not old.parent.exists()  # unused for a day: gone
    assert sorted(p.name for p in root.iterdir()) == sorted([new.parent.name, writing.name])


def cached_build(model: Path) -> tuple[Path, bool]:
    """What `loom run` does: reuse the model's build, else compile and write it."""
    sources = read_model([model])
    assert sources is not None
    build = cached_build_for([model], sources)
    if reuse_build(build) is not None:
        return build.out, False
    result = compile_sources(sources)
    assert result.model is not None, result.diagnostics
    return build.out, write_cached_build(build, result.model)
