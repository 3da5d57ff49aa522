"""Codemods: rewrite `.loom` files when the language changes (`loom fix <codemod>`, see
docs/codemods.md). Each codemod is one module; `handles.py` lifts the removed workflow `handle`
members into `commandHandler`s, over the file structure `scan.py` reads. They scan text with the front end's own grammar terminals and word
lists (`loom.lang.syntax.grammar`, `loom.lang.check.reads`), so they read names, strings and
comments exactly as the compiler does.
"""

from loom.codemod.handles import (
    MARKER,
    FileResult,
    LeftInPlace,
    Lifted,
    fix_files,
    fix_sources,
    loom_files,
)
from loom.codemod.scan import CodemodError

__all__ = [
    "MARKER",
    "CodemodError",
    "FileResult",
    "LeftInPlace",
    "Lifted",
    "fix_files",
    "fix_sources",
    "loom_files",
]
