"""Every `loom run` option and its `LOOM_*` variable are one field of `loom.serving.settings`: the
command line (`loom run --help`, `loom up --help`), docs/cli.md and the runtime's variables are
checked against it here; a value of the wrong type, on the command line or in the environment,
stops `loom run` with one line and exit 2; the test kit serves with the settings it is given
(on SQLite and PostgreSQL)."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import httpx
import pytest
from click.testing import CliRunner

from loom.cli.main import app
from loom.runtime.http.body_limit import DEFAULT_MAX_BODY_BYTES
from loom.runtime.http.edge_limits import EdgeLimits
from loom.runtime.http.flow_peers import DEFAULT_TIMEOUT as FLOW_PEER_TIMEOUT
from loom.runtime.http.idempotency import DEFAULT_TTL
from loom.runtime.messaging.relay import Relay
from loom.runtime.transports import NatsTransport
from loom.runtime.values.environment import (
    DEFAULT_POOL_OVERFLOW,
    DEFAULT_POOL_SIZE,
    DEFAULT_POOL_TIMEOUT,
)
from loom.runtime.values.logs import DEFAULT_FORMAT
from loom.runtime.values.principal import TENANT_CLAIM
from loom.serving.settings import (
    RunSettings,
    ServiceSettings,
    option_names,
    shown_default,
    value_kind,
    variable,
)
from loom.testing import serve
from tests.liveserver import free_port, running

ROOT = Path(__file__).resolve().parents[2]
BANKING = ROOT / "examples/banking/banking.loom"
LIMITED = ROOT / "tests/e2e/models/durable_autocommit.loom"


def options_table() -> str:
    """docs/cli.md's table of the options, as the settings define them."""
    rows = ["| option | variable | default | `loom up` | what it does |", "|---|---|---|---|---|"]
    for name in option_names(RunSettings):
        field = RunSettings.model_fields[name]
        up = "yes" if name in ServiceSettings.model_fields else ""
        rows.append(
            f"| `--{name.replace('_', '-')}` | `{variable(name, field)}` "
            f"| {shown_default(field) or ''} | {up} | {field.description} |"
        )
    return "\n".join(rows)


def test_docs_cli_lists_every_option_as_the_settings_define_it() -> None:
    doc = (ROOT / "docs/cli.md").read_text()
    table = options_table()
    assert table in doc, f"docs/cli.md's table of the options should read:\n{table}"


@pytest.mark.parametrize(("command", "settings"), [("run", RunSettings), ("up", ServiceSettings)])
def test_the_help_words_every_option_with_its_variable(
    command: str, settings: type[ServiceSettings]
) -> None:
    got = CliRunner().invoke(app, [command, "--help"], terminal_width=1000)
    assert got.exit_code == 0, got.output
    for name, field in settings.model_fields.items():
        line = next(
            (
                x
                for x in got.output.splitlines()
                if x.strip().startswith(f"--{name.replace('_', '-')} ")
            ),
            None,
        )
        assert line is not None, f"--help of {command} has no --{name}"
        assert f"variable: {variable(name, field)}" in line, line
        assert str(field.description) in " ".join(line.split()), line


def test_each_option_takes_its_fields_kind_of_value() -> None:
    ctx = click.Context(app)
    command = app.get_command(ctx, "run")
    assert command is not None
    params = {p.name: p for p in command.get_params(ctx) if isinstance(p, click.Option)}
    for name, field in RunSettings.model_fields.items():
        kind = value_kind(field)
        assert params[name].multiple is (kind is list), name  # repeatable: --broker, --api
        assert params[name].is_flag is (kind is bool), name  # a flag: --migrate


def test_the_runtime_reads_each_service_variable() -> None:
    # `migrate` is `loom run`'s own; every other service option reaches the service by its variable
    runtime = "".join(p.read_text() for p in (ROOT / "src/loom/runtime").rglob("*.py"))
    for name, field in ServiceSettings.model_fields.items():
        if name != "migrate":
            assert re.search(rf"\b{variable(name, field)}\b", runtime), name


def run_with(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
    return subprocess.run(
        [sys.executable, "-m", "loom.cli", "run", str(BANKING), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**clean, **env},
        check=False,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("env", "args", "said"),
    [
        ({"LOOM_PORT": "abc"}, [], "error: LOOM_PORT must be a whole number, not 'abc'"),
        ({}, ["--port", "abc"], "error: --port must be a whole number, not 'abc'"),
        (
            {"LOOM_PORT": "70000"},
            [],
            "error: LOOM_PORT must be 0 to 65535 (0: any free port), not '70000'",
        ),
        ({"LOOM_POOL_TIMEOUT": "soon"}, [], "error: LOOM_POOL_TIMEOUT must be a number"),
        ({"LOOM_MIGRATE": "maybe"}, [], "error: LOOM_MIGRATE must be true or false, not 'maybe'"),
        # a size of the right type out of range: the runtime's own reader words it
        ({"LOOM_MAX_BODY_BYTES": "-5"}, [], "error: LOOM_MAX_BODY_BYTES must be a number of"),
        ({}, ["--pool-size", "-2"], "error: LOOM_POOL_SIZE must be a whole number >= 1"),
        ({}, ["--log-format", "xml"], "error: LOOM_LOG_FORMAT must be json or text, not 'xml'"),
    ],
)
def test_a_bad_value_stops_loom_run_in_one_line(
    tmp_path: Path, env: dict[str, str], args: list[str], said: str
) -> None:
    done = run_with(
        env, "--database-url", f"sqlite+aiosqlite:///{tmp_path}/x.db", *args, cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(said), done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stdout


def test_a_variable_is_read_and_the_command_line_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "banking.loom"
    model.write_text(BANKING.read_text())
    monkeypatch.setenv("LOOM_MAX_BODY_BYTES", "64")
    monkeypatch.setenv("LOOM_PORT", "1")  # never listened on: `running` gives --port, which wins
    with running(str(model), port=free_port()) as base:
        small = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "Ada"})
        assert small.status_code == 200, small.text
        big = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "A" * 100})
        assert big.status_code == 413, big.text
        assert big.json()["max_bytes"] == 64


async def test_the_test_kit_serves_with_the_settings_given(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOM_MAX_BODY_BYTES", raising=False)
    settings = ServiceSettings(max_body_bytes=64)
    async with serve([LIMITED], database_url, settings=settings) as client:
        ok = await client.post("/api/items", json={"name": "pen"})
        assert ok.status_code < 300, ok.text
        big = await client.post("/api/items", json={"name": "p" * 100})
        assert big.status_code == 413, big.text
        assert big.json()["max_bytes"] == 64
    assert "LOOM_MAX_BODY_BYTES" not in os.environ  # set while the service was built, then back
    async with serve([LIMITED], database_url) as client:
        assert (await client.post("/api/items", json={"name": "p" * 100})).status_code < 300


def _amount(text: str) -> float | str:
    """A default as the settings word it: "1 MiB", "8 KiB", "86400", "tenant"."""
    units = {"KiB": 1024, "MiB": 1024 * 1024}
    number, _, unit = text.partition(" ")
    try:
        return float(number) * units.get(unit, 1)
    except ValueError:
        return text


def test_the_defaults_the_settings_state_are_the_runtimes() -> None:
    """The runtime decides each of these defaults when a variable is unset; the settings (and so
    `--help` and docs/cli.md) only word them: worded wrong, this fails."""
    edge = EdgeLimits()
    runtime: dict[str, float | str] = {
        "tenant_claim": TENANT_CLAIM,
        "max_body_bytes": DEFAULT_MAX_BODY_BYTES,
        "max_url_bytes": edge.max_url_bytes,
        "max_header_count": edge.max_header_count,
        "max_header_bytes": edge.max_header_bytes,
        "header_timeout": edge.header_timeout,
        "keep_alive_timeout": edge.keep_alive_timeout,
        "relay_lease": inspect.signature(Relay).parameters["lease"].default.total_seconds(),
        "redelivery_wait": inspect.signature(NatsTransport).parameters["ack_wait"].default,
        "idempotency_ttl": DEFAULT_TTL.total_seconds(),
        "flow_peer_timeout": FLOW_PEER_TIMEOUT,
        "pool_size": DEFAULT_POOL_SIZE,
        "pool_overflow": DEFAULT_POOL_OVERFLOW,
        "pool_timeout": DEFAULT_POOL_TIMEOUT,
        "log_format": DEFAULT_FORMAT,
    }
    stated = {}
    for name, field in ServiceSettings.model_fields.items():
        extra = field.json_schema_extra
        if (
            isinstance(extra, dict)
            and isinstance(extra.get("default_text"), str)
            and name in runtime
        ):
            stated[name] = _amount(str(extra["default_text"]))
    assert stated == runtime
