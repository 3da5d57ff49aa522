"""Real `loom run` processes the chaos scenarios start, kill -9 and restart, and the databases they
share. Nothing here depends on pytest, so bench/chaos.py drives the same servers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints
import httpx
from sqlalchemy import MetaData

from loom.runtime import Service
from tests.pgcluster import Cluster, _as_postgres, find_pg_bin, running_cluster

ROOT = Path(__file__).resolve().parents[2]
MODELS = Path(__file__).resolve().parent / "models"
CHAOS_MODEL = MODELS / "chaos.loom"
EXAMPLES = ROOT / "examples"


class ServerFailed(RuntimeError):
    """A server did not start, or stopped answering, within its deadline."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def copy_model(folder: Path, files: Sequence[Path], *extra: Path) -> list[Path]:
    """The model files (and `extra` files beside them, e.g. an extern module) copied into
    `folder`, so `loom run` builds into a `.loom/` of the run's own, not of the repository."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in (*files, *extra):
        shutil.copy(f, folder / f.name)
    return [folder / f.name for f in files]


class Server:
    """One `loom run` subprocess on a fixed port. With `lease`, it starts through
    LOOM_RELAY_LEASE (a shorter relay lease, so rows a killed replica claimed are claimed again soon);
    `env` adds (or replaces) variables of its environment."""

    def __init__(
        self,
        model: Sequence[Path],
        database_url: str,
        *,
        name: str = "server",
        lease: float | None = None,
        extern: str | None = None,
        log_dir: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.model = list(model)
        self.env = dict(env or {})
        self.database_url = database_url
        self.name = name
        self.lease = lease
        self.extern = extern
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = (log_dir or Path(tempfile.mkdtemp(prefix="loom-chaos-"))) / f"{name}.log"
        self.starts = 0
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        entry = ["-m", "loom.cli"]
        args = ["run", *map(str, self.model), "--database-url", self.database_url]
        args += ["--port", str(self.port)]
        if self.extern:
            args += ["--extern", self.extern]
        return [sys.executable, *entry, *args]

    def start(self) -> None:
        """Start the process (not waiting for it to answer: see `wait_ready`)."""
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "LOOM_LOG_LEVEL": "WARNING"}
        if self.lease is not None:
            env["LOOM_RELAY_LEASE"] = str(self.lease)
        env.update(self.env)
        # Output goes to a file, not a pipe: a pipe nobody reads fills up and blocks the server.
        with open(self.log_path, "ab") as log:
            log.write(f"--- start {self.starts + 1}: {' '.join(self.command())}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.command(), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env
            )
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    async def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(timeout=2) as client:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{self.base}/openapi.json")).status_code == 200:
                        return
                if not self.alive or time.monotonic() > deadline:
                    # which of the two it was, and where the whole log is: a tail may end
                    # mid-traceback when the process is still writing
                    how = (
                        f"exited with {self._proc.returncode}"
                        if self._proc is not None and not self.alive
                        else f"still not answering after {timeout:.0f}s"
                    )
                    raise ServerFailed(
                        f"{self.name} did not start ({how}; log {self.log_path}):\n"
                        f"{self.log_tail()}"
                    )
                await asyncio.sleep(0.2)  # poll; ServerFailed with the log past the deadline

    def kill(self) -> None:
        """SIGKILL: no lifespan shutdown, no relay stop, connections dropped mid-flight."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait(timeout=10)

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


@contextlib.contextmanager
def serving(*servers: Server) -> Iterator[None]:
    """Stop every server on the way out, whatever happened."""
    try:
        yield
    finally:
        for s in servers:
            s.stop()


async def outbox_counts(database_url: str) -> dict[str, int]:
    """`pending`, `delivered`, `dead` rows of the outbox, read straight from the database."""
    service = Service.from_url(database_url, MetaData())
    try:
        return dict(await service.outbox.counts())
    finally:
        await service.dispose()


async def get_all(client: httpx.AsyncClient, base: str, collection: str) -> list[dict[str, Any]]:
    """Every row of an aggregate's collection route, page by page."""
    items: list[dict[str, Any]] = []
    while True:
        r = await client.get(f"{base}{collection}", params={"limit": 500, "offset": len(items)})
        r.raise_for_status()
        page = r.json()
        items += page["items"]
        if not page["items"] or len(items) >= page["total"]:
            return items


# -- PostgreSQL ------------------------------------------------------------------------------


async def new_pg_database(cluster: Cluster, name: str, *, synchronous_commit: bool = False) -> str:
    """A fresh database in `cluster`. The suite's clusters run with synchronous_commit=off, which
    may lose the last commits when the server crashes; a scenario that crashes the server and
    counts acknowledged commits asks for `synchronous_commit=on` on its own database (a database
    setting outranks the server's command line)."""
    conn = await asyncpg.connect(cluster.dsn())
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        if synchronous_commit:
            await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = on')
    finally:
        await conn.close()
    return cluster.url(name)


@dataclass
class CrashableCluster:
    """A throwaway cluster of its own (never the suite's shared one) that a scenario may crash."""

    cluster: Cluster

    def restart_immediate(self) -> float:
        """`pg_ctl restart -m immediate`: every backend is killed, no checkpoint, then crash
        recovery at start. Answers the seconds it took."""
        pg_bin = find_pg_bin()
        assert pg_bin is not None
        data = self.cluster.root / "data"
        started = time.monotonic()
        # -l: the restarted server must not inherit (and hold open) our capture pipes
        log = str(self.cluster.root / "log")
        cmd = [str(pg_bin / "pg_ctl"), "-D", str(data), "-l", log, "-m", "immediate", "-w"]
        proc = subprocess.run(
            _as_postgres([*cmd, "restart"]),
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"pg_ctl restart failed:\n{proc.stdout}\n{proc.stderr}")
        return time.monotonic() - started


@contextlib.contextmanager
def crashable_cluster() -> Iterator[CrashableCluster]:
    with running_cluster() as cluster:
        yield CrashableCluster(cluster)
