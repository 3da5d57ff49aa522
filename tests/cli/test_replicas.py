"""Replicas that start together: several real `loom run` processes started at the same instant on
one model folder (no `.loom/` yet) and one fresh database must all come up and serve.

Each used to rebuild `.loom/build/` under the others (FileNotFoundError, ModuleNotFoundError), and
on PostgreSQL their schema creations collided (UniqueViolation on pg_type). The model has
aggregates, durable channels, a process and a context timer, so every runtime table is created.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO

import httpx
import pytest

from loom.build.package import MARKER
from tests.conftest import create_pg_database
from tests.liveserver import free_port
from tests.pgcluster import Cluster
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples/scheduling/scheduling.loom"
REPLICAS = 4
ROUTE = "/api/appointments"  # an aggregate's page: answers only once the schema exists


@contextmanager
def _replicas(model: Path, *args: str, n: int = REPLICAS) -> Iterator[list[str]]:
    """Start `n` `loom run` on `model` at once; yield their base URLs once every one answers 200
    on an aggregate route (fail, with every log, if one exits or they take over a minute)."""
    with ExitStack() as stack:
        procs: list[tuple[subprocess.Popen[str], IO[str], str]] = []
        for _ in range(n):
            log = stack.enter_context(tempfile.TemporaryFile(mode="w+"))
            port = free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "loom.cli", "run", str(model), *args, "--port", str(port)],
                cwd=model.parent,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
            stack.callback(_stop, proc)
            procs.append((proc, log, f"http://127.0.0.1:{port}"))
        waiting = {base for _, _, base in procs}
        deadline = time.monotonic() + 60
        while waiting:
            for _, _, base in procs:
                if base in waiting and _answers(base):
                    waiting.discard(base)
            if any(p.poll() is not None for p, _, _ in procs) or time.monotonic() > deadline:
                pytest.fail("replicas did not all start:\n" + _logs(procs))
            time.sleep(0.1)
        yield [base for _, _, base in procs]
        for proc, _, _ in procs:
            assert proc.poll() is None, "a replica died while serving:\n" + _logs(procs)


def _answers(base: str) -> bool:
    try:
        r = httpx.get(base + ROUTE, timeout=2)
    except httpx.HTTPError:
        return False
    assert r.status_code == 200, r.text  # up, but failing: not a slow start
    return True


def _logs(procs: list[tuple[subprocess.Popen[str], IO[str], str]]) -> str:
    out = []
    for i, (proc, log, _) in enumerate(procs):
        log.seek(0)
        out.append(f"--- replica {i} (exit {proc.poll()}) ---\n{log.read()[-4000:]}")
    return "\n".join(out)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


EXTRA = """
context Extra {
  aggregate Note {
    text: string
  }
}
"""


def _fresh_folder(root: Path) -> Path:
    root.mkdir()
    model = root / MODEL.name
    model.write_text(MODEL.read_text())
    return model


def _build_files(model: Path) -> dict[Path, int]:
    """Every generated file of the model's builds, with its mtime (ns); not the marker, which
    each start touches (it says when the build was last used)."""
    build = model.parent / ".loom" / "build"
    return {p: p.stat().st_mtime_ns for p in build.rglob("*") if p.is_file() and p.name != MARKER}


def _serve_once(model: Path, *args: str, python: tuple[str, ...] = ()) -> str:
    """Start one more `loom run` on `model` (`python`: options of the interpreter), check it
    serves, and answer its output."""
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as log:
        cmd = [
            sys.executable,
            *python,
            "-m",
            "loom.cli",
            "run",
            str(model),
            *args,
            "--port",
            str(port),
        ]
        proc = subprocess.Popen(cmd, cwd=model.parent, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_until(lambda: _answers(base) or proc.poll() is not None, timeout=60, what="start")
            assert proc.poll() is None, "did not start"
        finally:
            _stop(proc)  # type: ignore[arg-type]
        log.seek(0)
        return log.read()


@pytest.mark.postgres
def test_replicas_start_together_on_one_fresh_postgres_database(
    tmp_path: Path, pg_cluster: Cluster
) -> None:
    for round_ in range(2):
        model = _fresh_folder(tmp_path / f"round{round_}")
        url = pg_cluster.url(create_pg_database(pg_cluster))
        with _replicas(model, "--database-url", url) as bases:
            # one replica's write is every replica's data: they share the schema
            r = httpx.get(bases[-1] + ROUTE)
            assert r.status_code == 200 and r.json()["items"] == []
        # exactly one build folder, complete; no temporary folder left behind
        builds = sorted((model.parent / ".loom" / "build").iterdir())
        assert len(builds) == 1 and not builds[0].name.startswith("."), builds


def test_replicas_start_together_on_one_sqlite_file(tmp_path: Path) -> None:
    model = _fresh_folder(tmp_path / "app")
    with _replicas(model):
        pass
    assert model.with_suffix(".db").exists()
    builds = sorted((model.parent / ".loom" / "build").iterdir())
    assert len(builds) == 1 and not builds[0].name.startswith("."), builds


def test_an_unchanged_model_reuses_its_build_and_a_changed_one_gets_a_new_one(
    tmp_path: Path,
) -> None:
    model = _fresh_folder(tmp_path / "app")
    first = _serve_once(model)
    assert "build: written" in first, first
    before = _build_files(model)
    assert before
    # `-X importtime` lists every module the start imported: neither the compiler nor the code
    # generator, so the model was neither parsed, checked nor generated again
    again = _serve_once(model, python=("-X", "importtime"))
    assert "build: reused (the model is unchanged: not compiled)" in again, again
    imported = set(re.findall(r"^import time:.*\|\s*([\w.]+)$", again, re.MULTILINE))
    assert "loom.runtime" in imported, again  # the log does list the start's imports
    assert not {m for m in imported if m.startswith(("loom.lang", "loom.codegen", "lark"))}
    assert _build_files(model) == before  # not one file rewritten
    # a changed model builds beside the old build (which a running replica may still import)
    model.write_text(model.read_text() + EXTRA)
    # (its new tables are an additive change to the database: `--migrate` adds them)
    changed = _serve_once(model, "--migrate")
    assert "build: written" in changed, changed
    folders = list((model.parent / ".loom" / "build").iterdir())
    assert len(folders) == 2, folders


WARNED = """
context Notes {
  aggregate Note {
    text: string
    operation edit(t: string) {
      let unused = t
      text := t
    }
  }
}
"""


def test_a_reused_build_shows_the_models_warnings_again(tmp_path: Path) -> None:
    model = _fresh_folder(tmp_path / "app")
    model.write_text(model.read_text() + WARNED)
    first = _serve_once(model)
    assert "build: written" in first and "loom.unused-local" in first, first
    again = _serve_once(model)
    assert "not compiled" in again and "loom.unused-local" in again, again
