"""`loom run` start-up mistakes end in one `error:` line and exit status 2, before the `serving`
banner, never in a traceback: a port out of range or in use, a host that does not resolve, an
extern module that does not import or raises when imported (README.md, docs/extern.md)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.liveserver import ROOT, free_port

SUPPORT = ROOT / "examples/support"


def refused(*args: str) -> str:
    """Run `loom run ARGS` (no LOOM_ variable), expect exit 2 with no traceback and no banner, and
    answer its one line on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
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
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert "serving" not in r.stdout, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    return lines[0]


def support(tmp_path: Path, externs: str | None = None) -> str:
    """The support example in tmp_path; `externs` the text of a `support_externs.py` beside it."""
    shutil.copy(SUPPORT / "support.loom", tmp_path / "support.loom")
    if externs is not None:
        (tmp_path / "support_externs.py").write_text(externs)
    return str(tmp_path / "support.loom")


@pytest.fixture
def banking(tmp_path: Path) -> str:
    model = tmp_path / "banking.loom"
    model.write_text((ROOT / "examples/banking/banking.loom").read_text())
    return str(model)


# a port click reads as a number but no socket can take: `loom run` says so in one line
@pytest.mark.parametrize("port", ["99999", "65536", "-1"])
def test_a_port_out_of_range_is_one_line(banking: str, port: str) -> None:
    line = refused(banking, "--port", port)
    assert line == f"error: --port must be 0 to 65535 (0: any free port), not '{port}'", line


def test_a_port_in_use_is_one_line(banking: str) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        line = refused(banking, "--port", str(port))
    assert line == f"error: cannot listen on 127.0.0.1:{port}: Address already in use", line


def test_a_host_that_does_not_resolve_is_one_line(banking: str) -> None:
    line = refused(banking, "--host", "no-such-host.invalid", "--port", str(free_port()))
    assert line.startswith("error: cannot listen on no-such-host.invalid:"), line


def test_an_extern_module_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    line = refused(support(tmp_path), "--extern", "no_such_module_xyz", "--port", str(free_port()))
    assert "cannot import the extern module 'no_such_module_xyz'" in line, line
    assert "No module named 'no_such_module_xyz'" in line, line


def test_an_extern_module_that_raises_on_import_is_one_line(tmp_path: Path) -> None:
    model = support(tmp_path, 'raise RuntimeError("no licence server")\n')
    line = refused(model, "--extern", "support_externs", "--port", str(free_port()))
    assert "cannot import the extern module 'support_externs'" in line, line
    assert "RuntimeError: no licence server" in line, line


def test_an_extern_module_with_a_syntax_error_is_one_line(tmp_path: Path) -> None:
    model = support(tmp_path, "class TicketExterns(:\n")
    line = refused(model, "--extern", "support_externs", "--port", str(free_port()))
    assert "SyntaxError" in line and "support_externs.py" in line, line


def test_an_extern_module_without_its_class_is_one_line(tmp_path: Path) -> None:
    model = support(tmp_path, "VALUE = 1\n")
    line = refused(model, "--extern", "support_externs", "--port", str(free_port()))
    assert "has no class TicketExterns" in line, line


def test_no_extern_module_at_all_is_one_line(tmp_path: Path) -> None:
    line = refused(support(tmp_path), "--port", str(free_port()))
    assert "no module implements them" in line, line


def test_up_refuses_a_port_out_of_range(banking: str) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "loom.cli", "up", banking, "--port", "70000"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: --port 70000: the first deployable's port must be from 1 to 65535"
    )
