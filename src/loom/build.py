"""Writing a generated service to disk and loading it back: what `loom build`, `loom run` and the
test kit share.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

    from loom.model.ir import Model

# A folder holding this file was written by `loom build`, so a rebuild may replace it whole.
MARKER = ".loom-build"
_MARKER_TEXT = (
    "Written by `loom build`. Every build replaces this folder: do not edit files here.\n"
)


class BuildError(Exception):
    """A build that cannot go on, with a sentence for the user."""


def build_model(model: Model, out: Path) -> list[Path]:
    """Generate `model` into the folder `out` (a Python package) and return the files written."""
    from loom.codegen.python import generate

    files = generate(model, package=_package_name(out))
    _prepare(out)
    written = []
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        written.append(path)
    (out / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
    return written


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out} exists and is not a folder; choose another --output")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise BuildError(
                f"refusing to write into {out}: it is not empty and was not written by `loom build`; "
                "choose an empty or new folder"
            )
        shutil.rmtree(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot create {out}: {exc.strerror}") from None


def _package_name(out: Path) -> str:
    name = re.sub(r"\W", "_", out.name) or "service"
    return name if not name[0].isdigit() else f"_{name}"


def cache_dir_for(files: Sequence[Path]) -> Path:
    """Where `loom run` builds: a `.loom/` folder beside the first model file."""
    first = files[0].resolve()
    return first.parent / ".loom" / "build" / _package_name(Path(first.stem))


def default_sqlite_url(first_file: Path) -> str:
    """A SQLite file beside the model, so data survives a restart."""
    db = first_file.resolve().with_suffix(".db")
    return f"sqlite+aiosqlite:///{db}"


def import_package(out: Path) -> ModuleType:
    """Import the generated package in `out` under a name unique to that folder, and return its
    `main` module. Generated code imports its siblings relatively, so any name works."""
    out = out.resolve()
    digest = hashlib.sha256(str(out).encode()).hexdigest()[:10]
    name = f"loom_service_{_package_name(out)}_{digest}"
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
    spec = importlib.util.spec_from_file_location(
        name, out / "__init__.py", submodule_search_locations=[str(out)]
    )
    if spec is None or spec.loader is None:
        raise BuildError(f"{out} is not a generated Loom service (no __init__.py)")
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return importlib.import_module(f"{name}.main")


def load_app(out: Path, database_url: str | None) -> FastAPI:
    main = import_package(out)
    return main.build_app(database_url)  # type: ignore[no-any-return]
