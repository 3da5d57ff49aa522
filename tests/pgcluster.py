"""A throwaway PostgreSQL 15 cluster for the test suite.

`initdb` refuses to run as root, so when the tests run as root the cluster is created and started as
the `postgres` user, in a fresh folder that user owns. The server listens on a free loopback port
and a private socket folder, trusts local connections, and is stopped (and its folder removed) when
the test session ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PG_BIN_CANDIDATES = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin")


class PostgresUnavailable(RuntimeError):
    pass


def find_pg_bin() -> Path | None:
    explicit = os.environ.get("LOOM_PG_BIN")
    for candidate in (explicit, *PG_BIN_CANDIDATES):
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cluster:
    port: int
    root: Path
    options: str = ""  # the server's own: a later `start` must listen where the first did

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`pg_ctl stop -m mode`); `start` brings it back on the same port."""
        _run([*self._pg_ctl(), "-m", mode, "-w", "-t", "60", "stop"])

    def start(self) -> None:
        log = str(self.root / "log")
        _run([*self._pg_ctl(), "-o", self.options, "-l", log, "-w", "-t", "60", "start"])
        _wait_ready(self.port)

    def _pg_ctl(self) -> list[str]:
        pg_bin = find_pg_bin()
        if pg_bin is None:
            raise PostgresUnavailable("no PostgreSQL server binaries (pg_ctl) found")
        return [str(pg_bin / "pg_ctl"), "-D", str(self.root / "data")]

    def url(self, database: str = "postgres", driver: str = "asyncpg") -> str:
        return f"postgresql+{driver}://postgres@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"


def _as_postgres(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", "postgres", "--", *cmd]
    return ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(cmd)]


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(_as_postgres(cmd), capture_output=True, text=True, check=False)
    if proc.returncode != 0:  # raised as PostgresUnavailable, with the tool's own output
        raise PostgresUnavailable(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")


@contextlib.contextmanager
def running_cluster() -> Iterator[Cluster]:
    pg_bin = find_pg_bin()
    if pg_bin is None:
        raise PostgresUnavailable("no PostgreSQL server binaries (initdb) found")
    root = Path(tempfile.mkdtemp(prefix="loom-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(sockets, "postgres", "postgres")
    port = _free_port()
    try:
        initdb = [str(pg_bin / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        _run([*initdb, "-E", "UTF8", "--no-locale", "--no-sync"])
        options = (
            f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        pg_ctl = [str(pg_bin / "pg_ctl"), "-D", str(data)]
        _run([*pg_ctl, "-o", options, "-l", str(root / "log"), "-w", "-t", "60", "start"])
        _wait_ready(port)
        yield Cluster(port=port, root=root, options=options)
    finally:
        with contextlib.suppress(Exception):
            _run([str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    raise PostgresUnavailable(f"PostgreSQL did not accept connections on port {port}")
