"""Writing a generated service to disk and loading it back: what `loom build`, `loom run`'s
cached builds (`loom.build.cache`) and the test kit share.

Every build is written into a temporary folder beside its target and renamed into place, so no
reader ever sees a half-written package.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from loom.model import naming

if TYPE_CHECKING:
    from fastapi import FastAPI

    from loom.model.ir import Model
    from loom.model.ir.topology import Deployable

# A folder holding this file was written by `loom build`, so a rebuild may replace it whole. It is
# written last, so a build folder holding it is complete; `loom run` touches it on every reuse.
MARKER = ".loom-build"
_MARKER_TEXT = (
    "Written by `loom build`. Every build replaces this folder: do not edit files here.\n"
)


class BuildError(Exception):
    """A build that cannot go on, with a sentence for the user."""


def build_model(model: Model, out: Path) -> list[Path]:
    """Generate `model` into the folder `out` (a Python package) and return the files written.
    A model that declares deployables gets one package per deployable instead, each in
    `out/<deployable in snake case>/` (`deployable_packages`). A previous build in `out` is
    replaced whole; a folder Loom did not write is refused."""
    # imported here: loading a build (`loom run`'s reuse, the test kit) never needs the generator
    from loom.codegen.python import generate

    package = package_name(out)
    if model.deployables:
        files = {
            f"{name}/{rel}": text
            for name, deployable in deployable_packages(model)
            for rel, text in generate(model, package=name, contexts=deployable.contexts).items()
        }
    else:
        files = generate(model, package=package)
    _check_target(out)
    target = out.resolve()  # `-o .` stages beside the folder, not in it
    staged = stage(target.parent, files, package)
    try:
        _swap_into(staged / package, target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return [out / rel for rel in sorted(files)]


def deployable_packages(model: Model) -> list[tuple[str, Deployable]]:
    """The package name of each declared deployable (its name in snake case), in declaration
    order: where `loom build` writes it below its output folder."""
    named = [(package_name(Path(naming.snake(d.name))), d) for d in model.deployables]
    seen: dict[str, str] = {}
    for name, d in named:
        if name in seen:
            raise BuildError(
                f"deployables {seen[name]} and {d.name} would both be written to the package "
                f"{name}: rename one"
            )
        seen[name] = d.name
    return named


def _check_target(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out} exists and is not a folder; choose another --output")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BuildError(
            f"refusing to write into {out}: it is not empty and was not written by `loom build`; "
            "choose an empty or new folder"
        )


def stage(parent: Path, files: Mapping[str, str], package: str) -> Path:
    """A temporary folder in `parent` holding the complete package under `package/`."""
    _make_dir(parent)
    staged = Path(tempfile.mkdtemp(prefix=".tmp-", dir=parent))
    try:
        for rel, text in sorted(files.items()):
            path = staged / package / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
        (staged / package / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(staged, ignore_errors=True)
        raise BuildError(f"cannot write the build into {parent}: {exc.strerror}") from None
    return staged


def _swap_into(ready: Path, out: Path) -> None:
    """Rename the complete package `ready` to `out`, setting aside (then removing) the build that
    was there; if the rename fails, that build is put back. A folder the process works in (`-o .`)
    is kept, its entries replaced one by one, the marker last."""
    aside = None
    try:
        if out.is_dir() and (out == Path.cwd() or out in Path.cwd().parents):
            aside = Path(tempfile.mkdtemp(prefix=".old-", dir=out.parent))
            for entry in sorted(out.iterdir(), key=lambda p: p.name != MARKER):  # marker first
                os.rename(entry, aside / entry.name)
            for entry in sorted(ready.iterdir(), key=lambda p: p.name == MARKER):  # marker last
                os.rename(entry, out / entry.name)
            return
        if out.is_dir():
            aside = Path(tempfile.mkdtemp(prefix=".old-", dir=out.parent))
            os.rename(out, aside / "previous")
        os.rename(ready, out)
    except OSError as exc:
        if aside is not None and (aside / "previous").is_dir() and not out.exists():
            os.rename(aside / "previous", out)
        raise BuildError(f"cannot write {out}: {exc.strerror}") from None
    finally:
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)


def discard(folder: Path, root: Path) -> None:
    try:
        aside = Path(tempfile.mkdtemp(prefix=".old-", dir=root))
        os.rename(folder, aside / folder.name)
    except OSError:
        return  # another replica is removing it
    shutil.rmtree(aside, ignore_errors=True)


def _make_dir(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot create {folder}: {exc.strerror}") from None


def package_name(out: Path) -> str:
    name = re.sub(r"\W", "_", out.name) or "service"
    return name if not name[0].isdigit() else f"_{name}"


def import_package(out: Path) -> ModuleType:
    """Import the generated package in `out` under a name unique to that folder, and return its
    `main` module. Generated code imports its siblings relatively, so any name works."""
    out = out.resolve()
    digest = hashlib.sha256(str(out).encode()).hexdigest()[:10]
    name = f"loom_service_{package_name(out)}_{digest}"
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
