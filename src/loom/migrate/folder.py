"""The `migrations/` folder beside the first model file: one revision per migration,
`NNNN_<slug>.py` (the Alembic script) and `NNNN_<slug>.json` (the snapshot of the schema once it
is applied), numbered from 0001 without gaps. The whole model's revisions are in `migrations/`
itself; a deployable's (or a set of contexts') in `migrations/<its name>/`, since its service
holds only its contexts' tables, on a database of its own."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from loom.migrate.snapshot import Snapshot, read

__all__ = [
    "MigrationsError",
    "Revision",
    "folder_for",
    "named_folders",
    "next_name",
    "revisions",
]

_NAME = re.compile(r"(\d{4})_([a-z0-9_]+)\.py")


class MigrationsError(Exception):
    """The migrations folder (or the database's record of it) cannot be used, with a sentence."""


@dataclass(frozen=True)
class Revision:
    number: str  # "0001"
    script: Path

    @property
    def name(self) -> str:
        return self.script.stem

    @property
    def snapshot_path(self) -> Path:
        return self.script.with_suffix(".json")

    def snapshot(self) -> Snapshot:
        try:
            return read(self.snapshot_path)
        except ValueError as exc:
            raise MigrationsError(str(exc)) from None

    def checksum(self) -> str:
        """A digest of the script, recorded when it is applied."""
        return hashlib.sha256(self.script.read_bytes()).hexdigest()[:16]


def folder_for(first_file: Path, name: str | None = None) -> Path:
    """The migrations of the whole model (`name` None), or of the service named `name`
    (`run_options.Held.name`: a deployable in snake case)."""
    root = first_file.resolve().parent / "migrations"
    return root if name is None else root / name


def named_folders(first_file: Path) -> list[Path]:
    """The folders of `migrations/` that hold a service's revisions, by name."""
    root = folder_for(first_file)
    try:
        found = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError:
        return []
    return [p for p in found if any(_NAME.fullmatch(f.name) for f in p.iterdir())]


def revisions(folder: Path) -> list[Revision]:
    """The revisions in `folder`, in order; [] when there is no folder."""
    if not folder.is_dir():
        return []
    found = sorted((m.group(1), p) for p in folder.iterdir() if (m := _NAME.fullmatch(p.name)))
    out: list[Revision] = []
    for n, (number, path) in enumerate(found, start=1):
        if int(number) != n:
            raise MigrationsError(
                f"{folder}: expected migration {n:04d} next, found {path.name}; migrations are "
                "numbered from 0001 without gaps or repeats"
            )
        if not path.with_suffix(".json").is_file():
            raise MigrationsError(
                f"{path} has no snapshot beside it ({path.with_suffix('.json').name})"
            )
        out.append(Revision(number, path))
    return out


def next_name(existing: list[Revision], message: str) -> str:
    """The file stem of the next revision: `0003_add_nickname`."""
    slug = re.sub(r"[^a-z0-9]+", "_", message.lower()).strip("_")[:48].rstrip("_") or "migration"
    return f"{len(existing) + 1:04d}_{slug}"


def relative_source(source: str | None, root: Path) -> str | None:
    """A snapshot's `file:line:column` with the file relative to the model's folder `root`, so a
    snapshot reads the same whichever folder the command ran in (a file outside it stays as is)."""
    if source is None:
        return None
    file, sep, place = source.partition(":")
    try:
        return str(Path(file).resolve().relative_to(root.resolve())) + sep + place
    except ValueError:
        return source
