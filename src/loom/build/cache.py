"""`loom run`'s builds: content-addressed, `.loom/build/<digest>/<package>/`, the digest taken over
what decides the generated files: the model files (their names as given and their text, in the
order given), the Loom version and the compiler's own files. So a start with an unchanged model
finds its build without compiling anything, replicas started together on one folder agree on the
one folder to use, and a new build never replaces a folder an older replica may still be
importing from. Builds unused for a day are pruned.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import loom
from loom.build.package import MARKER, BuildError, discard, package_name, stage

if TYPE_CHECKING:
    from loom.model.ir import Model

# how long a build nobody started from is kept, and how old a temporary folder must be to be a
# crashed build's rather than one being written (writing takes well under a second)
PRUNE_UNUSED_AFTER = 24 * 3600.0
PRUNE_TEMPORARY_AFTER = 3600.0
_DIGEST = re.compile(r"[0-9a-f]{16}")
# Beside the marker: the compiler's warnings, shown again on each reuse
WARNINGS = ".loom-warnings"
# ... and the model's context and channel source names: what `loom run --api` / `--broker` may
# name, known on a reuse without compiling
NAMES = ".loom-names.json"


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
    return CachedBuild(root, _digest(sources, held), package_name(Path(first.stem)))


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
    staged = stage(build.root, generated, build.package)
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
            discard(final, root)
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
            discard(entry, root)


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
    generator, this package): a build made by other compiler code is never reused, also in a
    checkout where the version does not change. A few hundred `stat`s, no import."""
    root = Path(loom.__file__).parent
    files: list[Path] = []
    for part in ("build", "lang", "model", "codegen"):
        files += sorted(p for p in (root / part).rglob("*") if p.suffix in (".py", ".lark"))
    key = hashlib.sha256()
    for path in files:
        stat = path.stat()
        key.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return key.hexdigest()
