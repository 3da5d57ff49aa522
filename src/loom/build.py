"""Writing a generated service to disk and loading it back: what `loom build`, `loom run` and the
test kit share.

Every build is written into a temporary folder beside its target and renamed into place, so no
reader ever sees a half-written package. `loom run` keeps content-addressed builds,
`.loom/build/<digest>/<package>/`, the digest taken over what decides the generated files: the
model files (their names as given and their text, in the order given), the Loom version and the
compiler's own files. So a start with an unchanged model finds its build without compiling
anything, replicas started together on one folder agree on the one folder to use, and a new build
never replaces a folder an older replica may still be importing from. Builds unused for a day are
pruned.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import loom
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
# `loom run`: how long a build nobody started from is kept, and how old a temporary folder must be
# to be a crashed build's rather than one being written (writing takes well under a second)
PRUNE_UNUSED_AFTER = 24 * 3600.0
PRUNE_TEMPORARY_AFTER = 3600.0
_DIGEST = re.compile(r"[0-9a-f]{16}")
# Beside the marker in a `loom run` build: the compiler's warnings, shown again on each reuse
WARNINGS = ".loom-warnings"
# ... and the model's context and channel source names: what `loom run --api` / `--broker` may
# name, known on a reuse without compiling
NAMES = ".loom-names.json"


class BuildError(Exception):
    """A build that cannot go on, with a sentence for the user."""


def build_model(model: Model, out: Path) -> list[Path]:
    """Generate `model` into the folder `out` (a Python package) and return the files written.
    A model that declares deployables gets one package per deployable instead, each in
    `out/<deployable in snake case>/` (`deployable_packages`). A previous build in `out` is
    replaced whole; a folder Loom did not write is refused."""
    # imported here: loading a build (`loom run`'s reuse, the test kit) never needs the generator
    from loom.codegen.python import generate

    package = _package_name(out)
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
    staged = _stage(target.parent, files, package)
    try:
        _swap_into(staged / package, target)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return [out / rel for rel in sorted(files)]


def deployable_packages(model: Model) -> list[tuple[str, Deployable]]:
    """The package name of each declared deployable (its name in snake case), in declaration
    order: where `loom build` writes it below its output folder."""
    named = [(_package_name(Path(naming.snake(d.name))), d) for d in model.deployables]
    seen: dict[str, str] = {}
    for name, d in named:
        if name in seen:
            raise BuildError(
                f"deployables {seen[name]} and {d.name} would both be written to the package "
                f"{name}: rename one"
            )
        seen[name] = d.name
    return named


def read_model(files: Sequence[Path]) -> dict[str, str] | None:
    """The text of each model file by its name as given, read as the compiler reads it; None when
    one cannot be read (compiling the files then says which, and why)."""
    try:
        return {str(f): Path(f).read_text(encoding="utf-8-sig") for f in files}
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class CachedBuild:
    """Where `loom run` keeps the build of one model: `root/<digest>/<package>/` (`out`)."""

    root: Path  # `.loom/build/` beside the first model file
    digest: str
    package: str

    @property
    def final(self) -> Path:
        return self.root / self.digest

    @property
    def out(self) -> Path:
        return self.final / self.package


def cached_build_for(
    files: Sequence[Path], sources: Mapping[str, str], held: str = ""
) -> CachedBuild:
    """The build folder of the model `sources` (name -> text, as `read_model` gives it); `held`
    names the contexts the service holds ("" for all: `run_options.Held.key`)."""
    first = files[0].resolve()
    root = first.parent / ".loom" / "build"
    return CachedBuild(root, _digest(sources, held), _package_name(Path(first.stem)))


def reuse_build(build: CachedBuild) -> str | None:
    """The warnings of `build` when it is complete on disk (it is then marked used now, and old
    builds are pruned); None when it has to be written."""
    marker = build.out / MARKER
    if not marker.is_file():
        return None
    with contextlib.suppress(OSError):
        os.utime(marker)  # used now: spared by pruning
    prune(build.root, keep=build.final)
    try:
        return (build.out / WARNINGS).read_text(encoding="utf-8")
    except OSError:
        return ""


def model_names(out: Path) -> dict[str, list[str]] | None:
    """The model's `contexts` and `channel_sources` names a `loom run` build keeps (None: a
    build without them)."""
    try:
        found = json.loads((out / NAMES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def write_cached_build(
    build: CachedBuild,
    model: Model,
    warnings: str = "",
    contexts: Collection[str] | None = None,
) -> bool:
    """Generate `model` (the service of `contexts`, None for all) into `build`; False when
    another replica wrote the same build first. `warnings` (the compiler's, as text) are kept
    with it for the starts that reuse it."""
    from loom.codegen.python import generate  # only when writing: a reused build needs none

    generated = generate(model, package=build.package, contexts=contexts)
    names = {
        "contexts": [c.name for c in model.contexts],
        "channel_sources": [s.name for s in model.channel_sources],
    }
    generated = {**generated, NAMES: json.dumps(names)}
    if warnings:
        generated = {**generated, WARNINGS: warnings}
    staged = _stage(build.root, generated, build.package)
    try:
        written = _rename_into(staged, build.final, build.out / MARKER, build.root)
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    prune(build.root, keep=build.final)
    return written


def _rename_into(staged: Path, final: Path, marker: Path, root: Path) -> bool:
    """Rename `staged` to `final`; False when another replica renamed the same build in first.
    A folder of that name left incomplete (no marker) is set aside first."""
    for _ in range(3):
        try:
            os.rename(staged, final)
            return True
        except OSError:
            if marker.is_file():
                return False
            _discard(final, root)
    raise BuildError(f"cannot write the build into {final}")


def prune(root: Path, *, keep: Path) -> None:
    """Remove the builds under `root` nobody started from for `PRUNE_UNUSED_AFTER`, and crashed
    builds' temporary folders. A running replica imported its build when it started, long before
    that; each removal is a rename first, so two replicas pruning at once never collide."""
    now = time.time()
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry == keep or not entry.is_dir():
            continue
        try:
            if entry.name.startswith((".tmp-", ".old-")):
                stale = now - entry.stat().st_mtime > PRUNE_TEMPORARY_AFTER
            elif _DIGEST.fullmatch(entry.name) or (entry / MARKER).is_file():  # or the old layout
                used = [
                    m.stat().st_mtime
                    for m in (entry / MARKER, *entry.glob(f"*/{MARKER}"))
                    if m.is_file()
                ]
                stale = now - max(used, default=entry.stat().st_mtime) > PRUNE_UNUSED_AFTER
            else:
                continue
        except OSError:
            continue
        if stale:
            _discard(entry, root)


def _digest(sources: Mapping[str, str], held: str = "") -> str:
    key = hashlib.sha256(f"loom {loom.__version__}\0{_compiler_fingerprint()}\0".encode())
    for name, text in sources.items():  # in the order given: the model's declarations' order
        data = text.encode()
        key.update(f"{name}\0{len(data)}\0".encode() + data)
    if held:  # a service of some contexts is another package than the whole model's
        key.update(f"\0held\0{held}".encode())
    return key.hexdigest()[:16]


def _compiler_fingerprint() -> str:
    """The size and modification time of each file of the compiler (front end, model, code
    generator, this module): a build made by other compiler code is never reused, also in a
    checkout where the version does not change. A few hundred `stat`s, no import."""
    root = Path(__file__).parent
    files = [Path(__file__)]
    for part in ("lang", "model", "codegen"):
        files += sorted(p for p in (root / part).rglob("*") if p.suffix in (".py", ".lark"))
    key = hashlib.sha256()
    for path in files:
        stat = path.stat()
        key.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return key.hexdigest()


def _check_target(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise BuildError(f"{out} exists and is not a folder; choose another --output")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BuildError(
            f"refusing to write into {out}: it is not empty and was not written by `loom build`; "
            "choose an empty or new folder"
        )


def _stage(parent: Path, files: Mapping[str, str], package: str) -> Path:
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


def _discard(folder: Path, root: Path) -> None:
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


def _package_name(out: Path) -> str:
    name = re.sub(r"\W", "_", out.name) or "service"
    return name if not name[0].isdigit() else f"_{name}"


def default_sqlite_url(first_file: Path) -> str:
    """A SQLite file beside the model, so data survives a restart."""
    db = first_file.resolve().with_suffix(".db")
    return f"sqlite+aiosqlite:///{db}"


def safe_url(url: str) -> str:
    """A database URL fit to print: its password hidden."""
    from sqlalchemy.engine import make_url  # only to print one: `loom check` never needs it

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - printing must never fail
        return "<database url>"


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
