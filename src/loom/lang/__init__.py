"""The Loom front end: parse, resolve, check and lower `.loom` files into `loom.model.ir`."""

from loom.lang.codes import REGISTRY, CodeInfo
from loom.lang.compiler import CompileResult, compile_files, compile_sources
from loom.lang.diagnostics import Diagnostic, Span
from loom.lang.render import render_json, render_text

__all__ = [
    "REGISTRY",
    "CodeInfo",
    "CompileResult",
    "Diagnostic",
    "Span",
    "compile_files",
    "compile_sources",
    "render_json",
    "render_text",
]
