"""`loom init`: a new project from each example offered, whose test passes as written (pytest in a
child process, as its user runs it) and whose model checks clean; a folder with anything in it is
refused and left as it was; a wheel of Loom carries the examples `loom init` copies. And `loom
--version` / `loom version`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from loom.cli.init import DEFAULT_EXAMPLE, offered, project_files

ROOT = Path(__file__).resolve().parents[2]
LOOM = [sys.executable, "-m", "loom.cli"]


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = subprocess.run(
        args, capture_output=True, text=True, cwd=cwd, env=env, timeout=240, check=False
    )
    return r.returncode, r.stdout + r.stderr


def test_every_example_is_offered_and_the_default_is_one() -> None:
    examples = sorted(p.name for p in (ROOT / "examples").iterdir() if p.is_dir())
    assert offered() == examples
    assert DEFAULT_EXAMPLE in offered()


@pytest.mark.parametrize("example", offered())
def test_the_project_checks_clean_and_its_test_passes_as_written(
    tmp_path: Path, example: str
) -> None:
    project = tmp_path / "project"
    code, out = run([*LOOM, "init", str(project), "--example", example], tmp_path)
    assert code == 0, out
    written = {p.name for p in project.iterdir()}
    assert {"README.md", ".gitignore", f"test_{example}.py"} <= written, written
    assert any(name.endswith(".loom") for name in written)
    assert ".loom/" in (project / ".gitignore").read_text()
    readme = (project / "README.md").read_text()
    # an example with extern operations is run with them
    extern = " --extern support_externs" if example == "support" else ""
    assert f"- `loom run .{extern}` serves it" in readme, readme

    code, out = run([*LOOM, "check", "."], project)
    assert code == 0, out
    assert "error" not in out

    # as its user runs it: pytest in the project, nothing of this repository's configuration
    code, out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], project)
    assert code == 0, out
    assert " passed" in out and "failed" not in out, out


def test_the_default_example_goes_into_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # `git init` first is fine
    code, out = run([*LOOM, "init"], tmp_path)
    assert code == 0, out
    assert (tmp_path / f"{DEFAULT_EXAMPLE}.loom").is_file()


@pytest.mark.parametrize("existing", ["README.md", "banking.loom", "notes.txt"])
def test_a_folder_with_anything_in_it_is_refused_and_left_alone(
    tmp_path: Path, existing: str
) -> None:
    (tmp_path / existing).write_text("mine")
    code, out = run([*LOOM, "init", "."], tmp_path)
    assert code == 2, out
    assert f"error: . is not empty ({existing})" in out
    assert "Traceback" not in out
    assert [p.name for p in tmp_path.iterdir()] == [existing]
    assert (tmp_path / existing).read_text() == "mine"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["init", "a-file"], "error: a-file is a file, not a folder"),
        (["init", "p", "--example", "nope"], "Invalid value for '--example': 'nope' is not one of"),
    ],
)
def test_a_bad_command_line_is_one_sentence(tmp_path: Path, args: list[str], said: str) -> None:
    (tmp_path / "a-file").write_text("")
    code, out = run([*LOOM, *args], tmp_path)
    assert code == 2, out
    assert said in out and "Traceback" not in out
    assert not (tmp_path / "p").exists()


def test_a_wheel_carries_the_examples_and_init_copies_them_from_it(tmp_path: Path) -> None:
    # the wheel as pip builds it (in an isolated build environment), then Loom imported from that
    # wheel's files alone: loom init finds the examples inside the package
    # from a copy of what the build reads: the build leaves its build/ and egg-info in there
    source = tmp_path / "source"
    for name in ("src", "examples"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns(".*", "*.db"))
    (source / "docs").mkdir()
    shutil.copy(ROOT / "docs/diagnostics.md", source / "docs/diagnostics.md")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / name, source / name)
    code, out = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        tmp_path,
    )
    assert code == 0, out
    (wheel,) = tmp_path.glob("loom-*.whl")
    installed = tmp_path / "installed"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        z.extractall(installed)
    for example in offered():
        shipped = {n for n in names if n.startswith(f"loom/examples/{example}/")}
        # what a project from the checkout's example has, but what loom init writes itself
        copied = set(project_files(example)) - {"README.md", ".gitignore"}
        assert shipped == {f"loom/examples/{example}/{name}" for name in copied}
    env = {**os.environ, "PYTHONPATH": str(installed)}
    where = [sys.executable, "-c", "import loom.cli.init as i; print(i.examples_folder())"]
    code, out = run(where, tmp_path, env)
    assert code == 0 and out.strip() == str(installed / "loom" / "examples"), out
    # the diagnostics' page `loom lsp` links to, the wheel's own copy
    page = installed / "loom" / "docs" / "diagnostics.md"
    assert page.read_text() == (ROOT / "docs/diagnostics.md").read_text()
    where = [
        sys.executable,
        "-c",
        "from loom.lsp.convert import DIAGNOSTICS_DOCS; print(DIAGNOSTICS_DOCS)",
    ]
    code, out = run(where, tmp_path, env)
    assert code == 0 and out.strip() == page.as_uri(), out
    code, out = run([*LOOM, "init", "project", "--example", "shop"], tmp_path, env)
    assert code == 0, out
    assert (tmp_path / "project/shop.loom").read_text() == (
        ROOT / "examples/shop/shop.loom"
    ).read_text()
    # and its test passes on the wheel's test kit
    pytest_in_project = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    code, out = run(pytest_in_project, tmp_path / "project", env)
    assert code == 0 and " passed" in out, out


VERSION = """
import json, sys
from loom.cli.main import app
code = app.main(sys.argv[1:], prog_name="loom", standalone_mode=False)
print(json.dumps([code, sorted(sys.modules)]))
"""


@pytest.mark.parametrize("args", [["--version"], ["version"]])
def test_the_version_is_the_installed_distributions(tmp_path: Path, args: list[str]) -> None:
    code, out = run([*LOOM, *args], tmp_path)
    assert (code, out) == (0, f"loom {version('loom')}\n")
    # and it loads nothing heavy: no command but its own, no settings, no compiler
    code, out = run([sys.executable, "-c", VERSION, *args], tmp_path)
    assert code == 0, out
    loaded = set(json.loads(out.splitlines()[-1])[1])
    assert not {"pydantic", "asyncio", "loom.lang", "loom.cli.run", "loom.cli.init"} & loaded


def test_the_examples_python_passes_mypy_strict(tmp_path: Path) -> None:
    # what a project starts with is typed as Loom's own code is
    files = [str(p) for p in sorted((ROOT / "examples").glob("*/*.py"))]
    assert len(files) > len(offered())  # every test, and support's externs
    code, out = run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), *files], ROOT
    )
    assert code == 0, out
