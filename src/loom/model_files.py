"""The model files a command line names: a file is itself, a folder is every `*.loom` directly in
it (sorted), as `loom check DIR`, `build DIR`, `run DIR`, `up DIR` and `dead-letters --model DIR`
read it. A path that does not exist stays, for the compiler to report (`loom.file-unreadable`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class NoModelFiles(Exception):
    """A folder named as the model holds no `.loom` file."""

    def __init__(self, folder: Path) -> None:
        super().__init__(f"no .loom file in {folder}: name the model's files or their folder")
        self.folder = folder


def model_files(paths: Iterable[Path]) -> list[Path]:
    """The files of the model `paths` name, in order, each once; NoModelFiles for an empty folder."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(q for q in p.glob("*.loom") if q.is_file())
            if not found:
                raise NoModelFiles(p)
            out += found
        else:
            out.append(p)
    return list(dict.fromkeys(out))
