"""The model files a command line names, and their text. A file is itself, a folder is every
`*.loom` directly in it (sorted), as `loom check DIR`, `build DIR`, `run DIR`, `up DIR` and
`dead-letters DIR` read it. A path that does not exist stays, for the compiler to report
(`loom.file-unreadable`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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


def read_model(files: Sequence[Path]) -> dict[str, str] | None:
    """The text of each model file by its name as given, read as the compiler reads it; None when
    one cannot be read (compiling the files then says which, and why)."""
    try:
        return {str(f): Path(f).read_text(encoding="utf-8-sig") for f in files}
    except (OSError, UnicodeDecodeError):
        return None
