"""`loom init [DIR] [--example NAME]`: a new project from one of the examples: its model, its test
(Loom's test kit, passing as written), a README with the next commands and a `.gitignore`.

The examples are the repository's `examples/` folders: a wheel carries them as `loom/examples/`
(setup.py copies them in), a source checkout (an editable install) reads them where they are. An
example is offered once it carries its test (`test_<name>.py`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import click

import loom
from loom.cli.output import echo, fail

# the smallest example that still shows an aggregate, its invariant, events and a transactional
# workflow; the README's own
DEFAULT_EXAMPLE = "banking"
# what a folder may already hold and still be a new project's (`git init` first)
_IGNORED = {".git"}

GITIGNORE = """\
# what `loom run` writes beside the model: its build cache and its SQLite database
.loom/
*.db
*.db-journal
*.db-wal
*.db-shm
__pycache__/
.pytest_cache/
"""

README = """\
# {title}

A Loom model, made by `loom init --example {name}`: {models}, and `{test}`, its test.

- `loom check .` checks the model and prints its diagnostics (exit 1 on an error).
- `{run}` serves it on http://127.0.0.1:8000 (its API documented at /docs), its data
  in a SQLite file here.
- `{run} --reload` serves it too, and rebuilds and restarts the service whenever a
  `.loom` file changes, keeping the data.
- `pytest` runs the test: the model's API driven through Loom's test kit, `loom.testing`
  (`pip install pytest` first).
"""


def examples_folder() -> Path:
    """Where the examples are: inside the installed package (a wheel), else the source
    checkout's `examples/` (an editable install, whose package is `src/loom`)."""
    package = Path(loom.__file__).parent
    packaged = package / "examples"
    return packaged if packaged.is_dir() else package.parents[1] / "examples"


def offered() -> list[str]:
    """The examples `--example` takes: those that carry their test."""
    root = examples_folder()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / f"test_{p.name}.py").is_file())


def project_files(name: str) -> dict[str, str]:
    """The files of a new project from example `name`: its file name -> its text."""
    folder = examples_folder() / name
    files = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(folder.iterdir())
        if p.suffix in (".loom", ".py") and p.is_file()
    }
    models = [n for n in files if n.endswith(".loom")]
    files["README.md"] = README.format(
        title=name.capitalize(),
        name=name,
        models=", ".join(f"`{m}`" for m in models),
        test=f"test_{name}.py",
        run=run_command(files),
    )
    files[".gitignore"] = GITIGNORE
    return files


def run_command(files: Iterable[str]) -> str:
    """How the project is served from its folder: with its extern operations, when a module
    beside the model, not its test, implements them."""
    externs = [n[:-3] for n in files if n.endswith(".py") and not n.startswith("test_")]
    return "loom run ." + "".join(f" --extern {module}" for module in externs)


@click.command()
@click.argument(
    "directory",
    metavar="[DIR]",
    required=False,
    default=".",
    type=click.Path(path_type=Path),
    help="The project's folder: new, or empty (a .git folder aside). Default: here.",
)
@click.option(
    "--example",
    type=click.Choice(offered()),
    default=DEFAULT_EXAMPLE,
    show_default=True,
    help="The example to start from.",
)
def init(directory: Path, example: str) -> None:
    """Write a new project into DIR: an example model, a README with the next commands, a
    .gitignore and a test that passes as written.

    DIR must be new or empty: nothing is ever overwritten (exit 2, nothing written)."""
    if directory.exists() and not directory.is_dir():
        fail(f"{directory} is a file, not a folder")
    try:
        there = sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []
    except OSError as exc:
        fail(f"cannot read {directory}: {exc.strerror or exc}")
    if set(there) - _IGNORED:
        shown = ", ".join(there[:3]) + (", …" if len(there) > 3 else "")
        fail(
            f"{directory} is not empty ({shown}); loom init writes only into a new or empty "
            "folder: name a new one, e.g. `loom init my-project`"
        )
    files = project_files(example)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (directory / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write the project into {directory}: {exc.strerror or exc}")
    echo(f"wrote the {example} example into {directory}: {', '.join(files)}")
    where = "" if directory.resolve() == Path.cwd() else f"cd {directory} && "
    echo(f"next: {where}{run_command(files)} --reload   (README.md has the next commands)")
