"""A real `loom run` server in a subprocess, for tests that need a live HTTP port."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
LOOM = [sys.executable, "-m", "loom.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(count: int) -> int:
    """The first of `count` consecutive free ports, for `loom up --port` (which serves its
    deployables on port, port + 1, …). Taken below the kernel's ephemeral range: the port after
    a free ephemeral one is any outgoing connection's to take meanwhile."""
    low, _ = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(10_000, low - count)
        try:
            with contextlib.ExitStack() as held:
                for port in range(base, base + count):
                    s = held.enter_context(socket.socket())
                    s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise RuntimeError(f"no {count} consecutive free ports below {low}")


@contextmanager
def running(*args: str, port: int, log_path: Path | None = None) -> Iterator[str]:
    """`loom run ARGS` on `port` (its output in `log_path` when given): its base URL."""
    # The server's output goes to a file, not a pipe: a pipe nobody reads fills up and blocks it.
    opened = open(log_path, "w+") if log_path else tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
    with opened as log:
        proc = subprocess.Popen(
            [*LOOM, "run", *args, "--port", str(port)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"loom run did not start:\n{log.read()}")
                time.sleep(0.2)
            yield base
        finally:
            stop(proc)


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a server as Ctrl-C does, killing it if it has not stopped within 20 s."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def refused_start(*args: str, drop_env: str = "LOOM_") -> str:
    """Run `loom run ARGS` (with no environment variable starting with `drop_env`), expect it to
    refuse to start with exit status 2 and no traceback, and answer what it said on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop_env)}
    r = subprocess.run(
        [sys.executable, "-m", "loom.cli", "run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=120,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    return r.stderr
