"""`loom run --reload`: serve the model, and serve it again, rebuilt, whenever one of its `.loom`
files changes, on the same port and the same database.

This process does not serve. It holds the listening socket and runs the service as a child
`loom run` (its options handed down by their variables, as `loom up` does) which serves on that
socket. On a change it starts the next child on the same socket and hands the socket over once
the next one is ready: the previous one stops taking connections (and finishes those it took,
uvicorn's graceful shutdown), and only then does the next one start taking them. Connections
that arrive in between wait in the socket's backlog, so no request fails, and none made after
the next one answered one is served by the previous build. A next child that cannot start (the
model has errors: it prints them; the database refuses the change) leaves the previous one
serving.

Watching is polling the model's files (their size and modification time, every
`POLL_INTERVAL`), not inotify through a native dependency: a model is a handful of files, so a
poll costs nothing, and it sees edits on any file system, a container's bind mount or a network
share included, where file events do not always arrive. A folder given is listed again at each
poll, so a `.loom` file added to it counts too. The extern module (`--extern`) is watched with
them: its file, or every `.py` file of its package, found as `loom run` imports it (beside the
model, in the working folder, then on the path).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from loom.build.sources import NoModelFiles, model_files
from loom.cli.output import Color, echo

if TYPE_CHECKING:
    from loom.serving.settings import RunSettings

# what a child `loom run` is handed: the listening socket's file descriptor and three pipes'
# ends: it writes a byte to READY once its app has started, reads one from GO before it takes
# connections, and writes one to CLOSED once it takes no more (replaced)
SOCKET_FD = "LOOM_RELOAD_SOCKET_FD"
READY_FD = "LOOM_RELOAD_READY_FD"
GO_FD = "LOOM_RELOAD_GO_FD"
CLOSED_FD = "LOOM_RELOAD_CLOSED_FD"
POLL_INTERVAL = 0.3  # seconds between two looks at the model's files
# seconds a replaced service still reads the requests of the connections it took last
ACCEPTED_GRACE = 0.5
STOP_GRACE = 30.0  # seconds a replaced child has to finish its requests before it is killed
# seconds a replaced child has to stop taking connections before the next one takes them anyway
# (uvicorn looks at its exit flag every tenth of a second: this is for a child that hangs)
CLOSE_GRACE = 5.0

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
    serving: _Child | None = None
    stopping: list[subprocess.Popen[bytes]] = []
    try:
        watched = _Watched(paths, settings.extern)
        seen = watched.snapshot()
        serving, code = _start(command, env, listener)
        if serving is None and code != 1:  # not the model: the command line or the environment
            return code
        if serving is None:
            echo("reload: the model has errors; waiting for a change", err=True)
        else:
            serving.go()
        for changed in _polls(watched, seen):
            if serving is not None and serving.process.poll() is not None:  # crashed, or killed
                echo(
                    f"reload: the service exited ({serving.process.returncode}); "
                    "waiting for a change",
                    err=True,
                )
                serving.release()
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
                serving.replace()
                stopping.append(serving.process)
            started.go()
            serving = started
            stopping = [p for p in stopping if p.poll() is None]
            echo("reload: serving the new build", err=True)
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if serving is not None:
            serving.release()
        _stop([p for p in [serving.process if serving else None, *stopping] if p is not None])
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


class _Child:
    """A child `loom run` whose app has started, and the pipes' ends the handover goes through."""

    def __init__(self, process: subprocess.Popen[bytes], go: int, closed: int) -> None:
        self.process, self._go, self._closed = process, go, closed

    def go(self) -> None:
        """Let it take connections."""
        with contextlib.suppress(OSError):  # it died meanwhile: `supervise` sees it at the poll
            os.write(self._go, b"1")
        os.close(self._go)
        self._go = -1

    def replace(self) -> None:
        """Stop it taking connections, and return once it takes no more (or it ended, or hangs
        past CLOSE_GRACE); it finishes the requests it took on its own."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        ready, _, _ = select.select([self._closed], [], [], CLOSE_GRACE)
        if ready:  # its byte, or the end of the pipe: it exited
            with contextlib.suppress(OSError):
                os.read(self._closed, 1)
        self.release()

    def release(self) -> None:
        """Close this process's ends of the pipes."""
        for fd in (self._go, self._closed):
            if fd >= 0:
                os.close(fd)
        self._go = self._closed = -1


def _start(
    command: list[str], env: dict[str, str], listener: socket.socket
) -> tuple[_Child | None, int]:
    """A child `loom run` ready to serve on the listener, not taking connections before its
    `go`; or None and its exit code when it ended before (what went wrong it printed itself)."""
    ready, ready_w = os.pipe()
    go_r, go = os.pipe()
    closed, closed_w = os.pipe()
    theirs = (ready_w, go_r, closed_w)
    handed = {
        SOCKET_FD: str(listener.fileno()),
        READY_FD: str(ready_w),
        GO_FD: str(go_r),
        CLOSED_FD: str(closed_w),
    }
    try:
        # its own session: Ctrl-C reaches this process only, which stops it; through
        # `loom.serving.with_parent`, it gets SIGTERM if this process dies without stopping it
        child = subprocess.Popen(
            [sys.executable, "-m", "loom.serving.with_parent", str(os.getpid()), *command],
            env={**env, **handed, "PYTHONUNBUFFERED": "1"},
            pass_fds=(listener.fileno(), *theirs),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except BaseException:
        for fd in (ready, go, closed):
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    try:
        said = os.read(ready, 1)  # a byte: its app started; end of file: it exited
    except BaseException:
        os.close(go)
        os.close(closed)
        _stop([child])
        raise
    finally:
        os.close(ready)
    if said:
        return _Child(child, go, closed), 0
    os.close(go)
    os.close(closed)
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


@dataclass(frozen=True)
class _Watched:
    """What is watched, a change to any of it reloads: the model's files and the extern module's."""

    paths: Sequence[Path]
    extern: str | None

    def files(self) -> list[Path]:
        try:
            files = model_files(self.paths)
        except NoModelFiles:  # the folder has no model file now
            return []
        return files + extern_files(files[0].resolve().parent, self.extern)

    def snapshot(self) -> Snapshot:
        """Each watched file's size and modification time."""
        found: Snapshot = {}
        for path in self.files():
            with contextlib.suppress(OSError):  # removed meanwhile: it is not in the model now
                stat = path.stat()
                found[path] = (stat.st_mtime_ns, stat.st_size)
        return found


def extern_files(beside: Path, module: str | None) -> list[Path]:
    """The source of the extern module `module` as `loom run` imports it: beside the model (in
    `beside`), in the working folder, then on the path: its file, or every `.py` file of its
    package; none when there is none (`loom run` says so)."""
    if not module:
        return []
    relative = Path(*module.split("."))
    for folder in (beside, Path.cwd(), *(Path(p) for p in sys.path)):
        single = folder / relative.parent / f"{relative.name}.py"
        if single.is_file():
            return [single]
        package = folder / relative
        if (package / "__init__.py").is_file():
            return sorted(package.rglob("*.py"))
    return []


def _polls(watched: _Watched, seen: Snapshot) -> Iterator[list[Path]]:
    """At each poll, the watched files that changed since the last change (none, mostly), once
    they are still for a poll (an editor may write a file in more than one step)."""
    while True:
        time.sleep(POLL_INTERVAL)
        now = watched.snapshot()
        if now == seen:
            yield []
            continue
        settled = now
        while True:
            time.sleep(POLL_INTERVAL)
            settled, now = watched.snapshot(), settled
            if settled == now:
                break
        changed = sorted(p for p in settled.keys() | seen.keys() if settled.get(p) != seen.get(p))
        seen = settled
        yield changed


@dataclass(frozen=True)
class Handover:
    """What a child of `loom run --reload` is handed: the listening socket and the pipes' ends."""

    listener: socket.socket
    ready: int
    go: int
    closed: int


def handed_socket() -> Handover | None:
    """In a child of `loom run --reload`: the socket to serve on and the handover's pipes; None
    in a plain `loom run`."""
    names = (SOCKET_FD, READY_FD, GO_FD, CLOSED_FD)
    fds = [os.environ.pop(name, None) for name in names]
    if None in fds:
        return None
    sock, ready, go, closed = (int(fd) for fd in fds if fd is not None)
    return Handover(socket.socket(fileno=sock), ready, go, closed)


def serve_on(config: Any, handed: Handover) -> None:
    """Serve with uvicorn (`config`: its `Config`) on the socket handed down: say when the app
    has started, take connections once told to, and say when it takes no more."""
    import asyncio

    import uvicorn

    class Handed(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            # the app started with no server yet (uvicorn's startup with no socket), then the
            # server on the socket handed down once the previous service has stopped taking
            # connections: those arriving meanwhile wait in the backlog
            await super().startup([])
            if not self.started:
                return
            os.write(handed.ready, b"1")
            os.close(handed.ready)
            await _read_byte(handed.go)  # a byte: go; end of file: the supervisor is gone
            os.close(handed.go)
            config = self.config

            # uvicorn's own protocol factory, as its startup makes it for a socket
            def protocol(_loop: asyncio.AbstractEventLoop | None = None) -> asyncio.Protocol:
                factory: Any = config.http_protocol_class  # its type does not say the arguments
                made: asyncio.Protocol = factory(
                    config=config,
                    server_state=self.server_state,
                    app_state=self.lifespan.state,
                    _loop=_loop,
                )
                return made

            loop = asyncio.get_running_loop()
            server = await loop.create_server(
                protocol, sock=handed.listener, ssl=config.ssl, backlog=config.backlog
            )
            self.servers = [server]

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # Replaced: take no more connections and say so (the next service then takes them
            # from the socket), and give those just taken the time to send their request,
            # which uvicorn's shutdown would otherwise close unanswered; then finish the
            # requests as uvicorn does.
            for server in self.servers:
                server.close()
            with contextlib.suppress(OSError):
                os.write(handed.closed, b"1")
            os.close(handed.closed)
            await asyncio.sleep(ACCEPTED_GRACE)
            await super().shutdown(sockets)

    Handed(config).run(sockets=[handed.listener])


async def _read_byte(fd: int) -> bytes:
    """One byte from the pipe `fd` (empty at its end), without blocking the event loop."""
    import asyncio

    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes] = loop.create_future()

    def readable() -> None:
        loop.remove_reader(fd)
        if not done.done():
            done.set_result(os.read(fd, 1))

    loop.add_reader(fd, readable)
    return await done
