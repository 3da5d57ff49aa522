"""`loom run --reload`: serve the model, and serve it again, rebuilt, whenever one of its `.loom`
files changes, on the same port and the same database.

This process does not serve. It holds the listening socket and runs the service as a child
`loom run` (its options handed down by their variables, as `loom up` does) which serves on that
socket. On a change it starts the next child on the same socket, and stops the previous one only
once the next one serves: a request is answered by one or the other, and the previous one
finishes those it took (uvicorn's graceful shutdown). A next child that cannot start (the model
has errors: it prints them; the database refuses the change) leaves the previous one serving.

Watching is polling the model's files (their size and modification time, every
`POLL_INTERVAL`), not inotify through a native dependency: a model is a handful of files, so a
poll costs nothing, and it sees edits on any file system, a container's bind mount or a network
share included, where file events do not always arrive. A folder given is listed again at each
poll, so a `.loom` file added to it counts too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from loom.build.sources import NoModelFiles, model_files
from loom.cli.output import Color, echo

if TYPE_CHECKING:
    from loom.serving.settings import RunSettings

# what a child `loom run` is handed: the listening socket's file descriptor, and a pipe's to
# write one byte to once it serves
SOCKET_FD = "LOOM_RELOAD_SOCKET_FD"
READY_FD = "LOOM_RELOAD_READY_FD"
POLL_INTERVAL = 0.3  # seconds between two looks at the model's files
# seconds a replaced service still reads the requests of the connections it took last
ACCEPTED_GRACE = 0.5
STOP_GRACE = 30.0  # seconds a replaced child has to finish its requests before it is killed

Snapshot = dict[Path, tuple[int, int]]


class _Stopped(Exception):
    """SIGTERM: stop the child and end."""


def supervise(paths: Sequence[Path], settings: RunSettings, color: Color) -> int:
    """`loom run --reload` of the model `paths` name: the exit code (0 after Ctrl-C or SIGTERM)."""
    try:
        listener = _listen(settings.host, settings.port)
    except OSError as exc:
        echo(f"error: cannot listen on {settings.host}:{settings.port}: {exc.strerror}", err=True)
        return 2
    # port 0: the one the system chose, for the children's banner
    port = listener.getsockname()[1]
    env = {**os.environ, **settings.all_variables(), "LOOM_PORT": str(port), "LOOM_MIGRATE": "true"}
    command = [sys.executable, "-m", "loom.cli", "run", *map(str, paths), f"--color={color}"]
    command += [f"--broker={b}" for b in settings.broker] + [f"--api={a}" for a in settings.api]
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    serving: subprocess.Popen[bytes] | None = None
    stopping: list[subprocess.Popen[bytes]] = []
    try:
        seen = _snapshot(paths)
        serving, code = _start(command, env, listener)
        if serving is None and code != 1:  # not the model: the command line or the environment
            return code
        if serving is None:
            echo("reload: the model has errors; waiting for a change", err=True)
        for changed in _polls(paths, seen):
            if serving is not None and serving.poll() is not None:  # it crashed, or was killed
                echo(
                    f"reload: the service exited ({serving.returncode}); waiting for a change",
                    err=True,
                )
                serving = None
            if not changed:
                continue
            echo(f"reload: {', '.join(map(str, changed))} changed; rebuilding", err=True)
            started, code = _start(command, env, listener)
            if started is None:
                what = "the previous service" if serving is not None else "nothing"
                why = "the model has errors" if code == 1 else f"the new service exited ({code})"
                echo(f"reload: {why}; still serving {what}", err=True)
                continue
            if serving is not None:  # it stops taking connections and ends its requests
                serving.send_signal(signal.SIGTERM)
                stopping.append(serving)
            serving = started
            stopping = [p for p in stopping if p.poll() is None]
            echo("reload: serving the new build", err=True)
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        _stop([p for p in [serving, *stopping] if p is not None])
        listener.close()
    return 0


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Stopped


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket every child serves on, as uvicorn would bind it."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
        listener.listen(2048)  # uvicorn's backlog
    except OSError:
        listener.close()
        raise
    return listener


def _start(
    command: list[str], env: dict[str, str], listener: socket.socket
) -> tuple[subprocess.Popen[bytes] | None, int]:
    """A child `loom run` serving on the listener: it once it serves, or None and its exit code
    when it ended before (what went wrong it printed itself)."""
    read, write = os.pipe()
    handed = {SOCKET_FD: str(listener.fileno()), READY_FD: str(write)}
    try:
        # its own session: Ctrl-C reaches this process only, which stops it; through
        # `loom.serving.with_parent`, it gets SIGTERM if this process dies without stopping it
        child = subprocess.Popen(
            [sys.executable, "-m", "loom.serving.with_parent", str(os.getpid()), *command],
            env={**env, **handed, "PYTHONUNBUFFERED": "1"},
            pass_fds=(listener.fileno(), write),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        os.close(write)
    try:
        ready = os.read(read, 1)  # a byte: it serves; end of file: it exited
    except BaseException:
        _stop([child])
        raise
    finally:
        os.close(read)
    if ready:
        return child, 0
    return None, child.wait()


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each, then at most STOP_GRACE seconds to end, then SIGKILL."""
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _snapshot(paths: Sequence[Path]) -> Snapshot:
    """Each model file's size and modification time (none: the folder has no model file now)."""
    try:
        files = model_files(paths)
    except NoModelFiles:
        return {}
    found: Snapshot = {}
    for path in files:
        with contextlib.suppress(OSError):  # removed meanwhile: it is not in the model now
            stat = path.stat()
            found[path] = (stat.st_mtime_ns, stat.st_size)
    return found


def _polls(paths: Sequence[Path], seen: Snapshot) -> Iterator[list[Path]]:
    """At each poll, the model files that changed since the last change (none, mostly), once
    they are still for a poll (an editor may write a file in more than one step)."""
    while True:
        time.sleep(POLL_INTERVAL)
        now = _snapshot(paths)
        if now == seen:
            yield []
            continue
        settled = now
        while True:
            time.sleep(POLL_INTERVAL)
            settled, now = _snapshot(paths), settled
            if settled == now:
                break
        changed = sorted(p for p in settled.keys() | seen.keys() if settled.get(p) != seen.get(p))
        seen = settled
        yield changed


def handed_socket() -> tuple[socket.socket, int] | None:
    """In a child of `loom run --reload`: the listening socket to serve on and the pipe to say
    it serves on; None in a plain `loom run`."""
    fd, ready = os.environ.pop(SOCKET_FD, None), os.environ.pop(READY_FD, None)
    if fd is None or ready is None:
        return None
    return socket.socket(fileno=int(fd)), int(ready)


def serve_on(config: Any, listener: socket.socket, ready: int) -> None:
    """Serve with uvicorn (`config`: its `Config`) on the socket handed down, and write the byte
    to `ready` once it serves."""
    import asyncio

    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                os.write(ready, b"1")
                os.close(ready)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # Replaced: take no more connections (the next service takes them from the socket),
            # and give those just taken the time to send their request, which uvicorn's shutdown
            # would otherwise close unanswered; then finish the requests as uvicorn does.
            for server in self.servers:
                server.close()
            await asyncio.sleep(ACCEPTED_GRACE)
            await super().shutdown(sockets)

    Announcing(config).run(sockets=[listener])
