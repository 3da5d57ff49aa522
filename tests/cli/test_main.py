"""The `loom` command (`loom.cli.main`): one click group whose commands are imported when chosen,
so `loom check` and `loom build` load nothing of the other commands; every command line, run as a
user runs it, answers with a sentence and its exit code, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from loom.cli.main import COMMANDS, app

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
    ("args", "code", "said"),
    [
        (["check", BANKING], 0, "ok: 1 file(s), no problems"),
        (["check", "shop.loom", "--color", "always"], 1, "error"),
        (["check", "--format=json", "shop.loom"], 1, '"code"'),
        (["check", "missing.loom"], 1, "missing.loom"),
        (["check", BANKING, "--format", "yaml"], 2, "'yaml' is not one of"),
        (["check"], 2, "Missing argument 'FILES...'"),
        (["build", "shop.loom", "-o", "out"], 1, "error"),
        (["build", BANKING, "--output=out", "--color", "never"], 0, "wrote"),
        (["build", BANKING, "-o", "folder"], 2, "it is not empty and was not written by"),
        (["build", BANKING], 2, "Missing option '-o' / '--output'"),
        (["run", BANKING, "--port", "+80x"], 2, "error: --port must be a whole number, not '+80x'"),
        (["run", BANKING, "--no-such-option", "x"], 2, "No such option '--no-such-option'"),
        (["no-such-command"], 2, "No such command 'no-such-command'"),
    ],
)
def test_a_command_line_answers_with_a_sentence_and_its_exit_code(
    tmp_path: Path, args: list[str], code: int, said: str
) -> None:
    (tmp_path / "shop.loom").write_text(BROKEN)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "mine.txt").write_text("not loom's")
    got, out, err = _run("loom", args, tmp_path)
    assert got == code, out + err
    assert said in out + err
    assert "Traceback" not in err


def test_every_command_is_listed_by_its_summary_and_loads() -> None:
    ctx = click.Context(app)
    assert app.list_commands(ctx) == list(COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        command = app.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=10**6) == summary, name
    code, out, _ = _run("loom.cli", ["--help"], ROOT)
    assert code == 0
    assert all(f"  {name} " in out for name in COMMANDS)


LOADED = """
import json, sys
from loom.cli.main import app
code = app.main(sys.argv[1:], prog_name="loom", standalone_mode=False)
print(json.dumps([code, sorted(sys.modules)]))
"""


@pytest.mark.parametrize("args", [["check", BANKING], ["build", BANKING, "-o", "out"]])
def test_check_and_build_load_no_other_command(tmp_path: Path, args: list[str]) -> None:
    # start-up: the run options (pydantic), asyncio and the other commands are theirs to load
    r = subprocess.run(
        [sys.executable, "-c", LOADED, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    code, loaded = json.loads(r.stdout.splitlines()[-1])
    assert code == 0, r.stdout + r.stderr
    assert {"loom.lang", f"loom.cli.{args[0]}"} <= set(loaded)  # what it did load is listed
    others = {where.partition(":")[0] for name, (where, _) in COMMANDS.items() if name != args[0]}
    assert not ({"typer", "pydantic", "asyncio", "loom.serving.options"} | others) & set(loaded)


SERVED = """
import json, sys
from pathlib import Path
from loom.cli.output import Color
from loom.cli.serve import _build, check_database
from loom.build.package import import_package
from loom.serving.held import Held

files = [Path(sys.argv[1])]
out, state = _build(files, Color.never, Held())
main = import_package(out)
url = "sqlite+aiosqlite:///" + sys.argv[2]
main.build_app(url)
check_database(files, main, url, None, migrate=False)
print(json.dumps([state, sorted(sys.modules)]))
"""


def test_loom_run_of_a_reused_build_loads_no_compiler(tmp_path: Path) -> None:
    # start-up: a model built before is served without parsing, checking or generating it again
    model = tmp_path / "banking.loom"
    model.write_text(Path(BANKING).read_text())
    states = []
    for _ in range(2):
        r = subprocess.run(
            [sys.executable, "-c", SERVED, str(model), str(tmp_path / "bank.db")],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        state, loaded = json.loads(r.stdout.splitlines()[-1])
        states.append(state.split(" ")[0])
    assert states == ["written", "reused"]
    compiler = {"loom.lang.compiler", "loom.lang.syntax", "loom.model.ir", "loom.codegen"}
    # nor the metrics client: /metrics imports it on its first scrape (docs/observability.md)
    unwanted = compiler | {"prometheus_client"}
    assert not unwanted & set(loaded), sorted(unwanted & set(loaded))
