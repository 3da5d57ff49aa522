"""Pass 2, names: the symbol tables of the program (`Program`): contexts merged across files, the
declarations of each by kind and name, and the duplicates and reserved names that make a name
ambiguous. `type_refs.resolve_type` turns a written type into a type against those tables; the
checker calls it for every declared type. No semantic rule lives here: those are in `check/`.
"""

from __future__ import annotations

from loom.lang.diagnostics import Sink
from loom.lang.names.symbols import ContextSymbols, Program, build
from loom.lang.syntax import SyntaxResult


def resolve(syntax: SyntaxResult, sink: Sink) -> Program:
    """Bind every declaration of every file to its context's tables; naming errors go to `sink`."""
    return build(syntax.files, sink)


__all__ = ["ContextSymbols", "Program", "resolve"]
