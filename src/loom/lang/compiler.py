"""The front end's entry points: files or texts in, an IR model and diagnostics out.

The pipeline is four passes, each one package with one entry function and a typed result:
`syntax.parse` -> `SyntaxResult`, `names.resolve` -> `Program`, `check.check` -> `Facts`,
`lower.lower` -> `ir.Model`; then `flow.check_flow` checks the lowered model's event flow.

This is the boundary the user sees, so it never raises: an unreadable file is a diagnostic, and any
unexpected exception in a stage becomes `loom.internal-error` instead of a traceback.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loom.lang.check import Facts, check
from loom.lang.check.atomicity import check_atomicity
from loom.lang.diagnostics import Diagnostic, Sink, Span
from loom.lang.flow import check_flow
from loom.lang.lower import lower
from loom.lang.names import Program, resolve
from loom.lang.syntax import ast, parse
from loom.model import ir


@dataclass
class CompileResult:
    model: ir.Model | None  # None when any error was reported
    diagnostics: list[Diagnostic]  # sorted by file, line, column
    sources: dict[str, str] = field(default_factory=dict)  # file name -> text, for rendering

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)


@dataclass
class Stages:
    """What each pass made, as far as the compile got: an editor reads declarations, references
    and types from these (loom.lsp); `loom check` needs only the `CompileResult`."""

    files: list[ast.File] = field(default_factory=list)
    program: Program | None = None
    facts: Facts | None = None


def compile_files(paths: Sequence[str | Path]) -> CompileResult:
    """Compile the given files as one model. File names are kept exactly as given."""
    sink = Sink()
    sources: dict[str, str] = {}
    for p in paths:
        name = str(p)
        try:
            sources[name] = Path(p).read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            sink.report(
                "loom.file-unreadable",
                f"cannot read `{name}`: {reason}",
                Span(name, 1, 1, 1, 1),
                help="check the path, and that the file is UTF-8 text",
            )
    return _compile(sources, sink)


def compile_sources(sources: Mapping[str, str]) -> CompileResult:
    """Compile in-memory texts (name -> text) as one model."""
    return _compile(dict(sources), Sink())


def analyse_sources(sources: Mapping[str, str]) -> tuple[CompileResult, Stages]:
    """Compile in-memory texts as one model, keeping what each pass made."""
    stages = Stages()
    return _compile(dict(sources), Sink(), stages), stages


def _compile(sources: dict[str, str], sink: Sink, stages: Stages | None = None) -> CompileResult:
    model: ir.Model | None = None
    try:
        model = _run(sources, sink, stages if stages is not None else Stages())
    except Exception as exc:  # noqa: BLE001 - the boundary: report, never crash
        if _is_recursion(exc):
            # Not a bug: the tree walkers recurse once per nesting level, and Python's stack is
            # finite. Thousands of levels only come from generated text; say how to get around it.
            first = next(iter(sources), "<input>")
            sink.report(
                "loom.nesting-too-deep",
                "an expression in this model nests too deeply for the compiler",
                Span(first, 1, 1, 1, 1),
                help="split long chains of operators or nested lists into `let` steps or fields",
            )
        else:
            _internal_error(sink, sources, exc)
        model = None
    diagnostics = sorted(sink.items, key=lambda d: d.sort_key())
    if any(d.severity == "error" for d in diagnostics):
        model = None
    return CompileResult(model, diagnostics, sources)


def _run(sources: dict[str, str], sink: Sink, stages: Stages) -> ir.Model | None:
    syntax = parse(sources, sink)
    stages.files = syntax.files
    if sink.has_errors:
        # A file that did not parse is missing declarations the others may use; checking the rest
        # would mostly report names that are only "unknown" because of the syntax error.
        return None
    prog = stages.program = resolve(syntax, sink)
    facts = stages.facts = check(prog, sources, sink)
    if sink.has_errors:
        return None
    model = lower(prog, facts, sources)
    check_atomicity(model, sources, sink)  # reads the saves lowering placed
    check_flow(model, sources, sink)  # the whole model's event flow, state machines, processes
    return model


def _is_recursion(exc: BaseException | None) -> bool:
    while exc is not None:
        if isinstance(exc, RecursionError):
            return True
        exc = getattr(exc, "orig_exc", None) or exc.__cause__ or exc.__context__
    return False


def _internal_error(sink: Sink, sources: dict[str, str], exc: BaseException) -> None:
    first = next(iter(sources), "<input>")
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    at = f" (at {Path(where[0].filename).name}:{where[0].lineno})" if where else ""
    sink.items.append(
        Diagnostic.make(
            "loom.internal-error",
            f"the compiler failed: {type(exc).__name__}: {exc}{at}",
            Span(first, 1, 1, 1, 1),
            help="this is a bug in Loom; please report it with the model",
        )
    )
