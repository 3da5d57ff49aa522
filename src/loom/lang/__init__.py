"""The Loom front end: parse, resolve, check and lower `.loom` files into `loom.model.ir`.

The names below load on first use: importing one pass's module (`loom.lang.diagnostics`, say, as
the migration tools do) does not load the whole compiler, and `loom run` of a model built before
loads none of it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loom.lang.codes import REGISTRY, CodeInfo
    from loom.lang.compiler import CompileResult, compile_files, compile_sources
    from loom.lang.diagnostics import Diagnostic, Span
    from loom.lang.render import render_json, render_sarif, render_text

_HOMES = {
    "REGISTRY": "codes",
    "CodeInfo": "codes",
    "CompileResult": "compiler",
    "compile_files": "compiler",
    "compile_sources": "compiler",
    "Diagnostic": "diagnostics",
    "Span": "diagnostics",
    "render_json": "render",
    "render_text": "render",
    "render_sarif": "render",
}

__all__ = [
    "REGISTRY",
    "CodeInfo",
    "CompileResult",
    "Diagnostic",
    "Span",
    "compile_files",
    "compile_sources",
    "render_json",
    "render_sarif",
    "render_text",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'loom.lang' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"loom.lang.{home}"), name)
    globals()[name] = value  # once: later look-ups are plain module attributes
    return value
