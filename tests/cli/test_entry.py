"""The `loom` entry point (`loom.entry`): a plain `check` or `build` runs without typer, and answers
exactly as the typer command does (same exit code, same output); every other command line is
typer's."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from loom import cli, serve
from loom.commands import Color
from loom.entry import plain
from loom.serve import RunOptions

ROOT = Path(__file__).resolve().parents[2]
BANKING = str(ROOT / "examples/banking/banking.loom")
BROKEN = """\
context Shop {
  aggregate Item {
    name: string
    operation rename(n: int) {
      name := n
    }
  }
}
"""


def _run(module: str, args: list[str], cwd: Path) -> tuple[int, str, str]:
    r = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["check", BANKING],
        ["check", "shop.loom", "--color", "always"],
        ["check", "--format=json", "shop.loom"],
        ["check", "missing.loom"],
        ["build", "shop.loom", "-o", "out"],
        ["build", BANKING, "--output=out", "--color", "never"],
        ["build", BANKING, "-o", "folder"],  # a folder loom did not write: refused (exit 2)
    ],
)
def test_a_plain_command_answers_as_typer_does(tmp_path: Path, args: list[str]) -> None:
    assert plain(args) is not None
    (tmp_path / "shop.loom").write_text(BROKEN)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "mine.txt").write_text("not loom's")
    fast = _run("loom.entry", args, tmp_path)
    typer = _run("loom.cli", args, tmp_path)
    assert fast == typer
    assert "Traceback" not in fast[2]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["run", BANKING, "--help"],
        ["run", BANKING, "--port", "+80"],
        ["run", BANKING, "--port", "80", "--port", "81"],
        ["run", BANKING, "--migrate=yes"],
        ["run", BANKING, "--relay-lease", "1e3"],
        ["run", BANKING, "--no-such-option", "x"],
        ["run"],
        ["check"],
        ["check", "--help"],
        ["check", BANKING, "--format", "yaml"],
        ["check", BANKING, "--format", "json", "--format", "text"],
        ["check", BANKING, "--format"],
        ["check", BANKING, "--", "-x.loom"],
        ["build", BANKING],
        ["build", BANKING, "-oout"],
        ["build", BANKING, "-o", "--color"],
    ],
)
def test_any_other_command_line_is_typers(args: list[str]) -> None:
    assert plain(args) is None


def test_a_plain_run_reads_every_option_as_typer_does() -> None:
    command = plain(
        ["run", BANKING, "--port=8123", "--migrate", "--broker", "nats://x", "--broker", "B=y"]
        + ["--relay-lease", "2.5", "--jwt-public-key", "k.pem", "--color", "never", "--api=A=u"]
    )
    assert isinstance(command, functools.partial) and command.func is serve.run
    files, options = command.args
    assert files == [Path(BANKING)]
    assert options == RunOptions(
        port=8123,
        migrate=True,
        broker=["nats://x", "B=y"],
        relay_lease=2.5,
        jwt_public_key=Path("k.pem"),
        color=Color.never,
        api=["A=u"],
    )


def test_the_plain_run_knows_every_option_of_typers_run() -> None:
    typer_options = set(inspect.signature(cli.run).parameters) - {"files"}
    assert typer_options == {f.name for f in dataclasses.fields(RunOptions)}


def test_a_plain_run_refusal_answers_as_typer_does(tmp_path: Path) -> None:
    for args in (
        ["run", "shop.loom", "--port", "8099"],  # the model has errors: 1
        ["run", BANKING, "--deployable", "Nope", "--port", "8099"],  # no such deployable: 2
        ["run", BANKING, "--jwt-secret", "s" * 32, "--jwt-public-key", "k.pem"],  # both: 2
    ):
        assert plain(args) is not None
        (tmp_path / "shop.loom").write_text(BROKEN)
        fast = _run("loom.entry", args, tmp_path)
        typer = _run("loom.cli", args, tmp_path)
        assert fast == typer, args
        assert fast[0] in (1, 2) and "Traceback" not in fast[2]


def test_typer_reads_what_the_entry_leaves_to_it(tmp_path: Path) -> None:
    code, _, err = _run("loom.entry", ["check", BANKING, "--format", "yaml"], tmp_path)
    assert code == 2 and "yaml" in err


@pytest.mark.parametrize("args", [["check", BANKING], ["build", BANKING, "-o", "out"]])
def test_a_plain_check_or_build_loads_neither_typer_nor_asyncio(
    tmp_path: Path, args: list[str]
) -> None:
    # start-up: typer (with pydantic) and `loom.serve` (with asyncio) are `loom run`'s, or typer's
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loom.entry", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = {
        line.rsplit("|", 1)[-1].strip()
        for line in r.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"loom.lang", "loom.commands"} <= loaded  # what it did load is listed
    assert not {"typer", "asyncio", "loom.serve"} & loaded
