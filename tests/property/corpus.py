"""The corpus of models `loom check` accepts, collected from the repository at test time.

Every model the project already holds is a candidate: the examples, the conformance cases, the
docs' `loom` blocks, the models of the compiler's own tests and of the end-to-end and chaos tests,
and this folder's models/ (shapes the others miss).
A candidate joins the corpus when it compiles with no error (warnings are fine), so a model added
anywhere in those places is covered without touching this file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from loom.lang import compile_sources
from loom.model import ir

ROOT = Path(__file__).resolve().parents[2]
# The docs' blocks, found as tests/docs/test_docs_examples.py finds them.
DOC_BLOCK = re.compile(r"```loom\n(?P<body>.*?)```", re.DOTALL)
# Under tests/lang a folder holding none or at least this many `.loom` files directly is a collection
# of models (data/ok, data/diagnostics, codemod/cases…); any other folder is one multi-file model
# (data/diagnostics/contexts_across_files, codemod/folder…), as tests/lang/test_diagnostics_data.py
# reads its folders.
COLLECTION_SIZE = 3


@dataclass(frozen=True)
class Model:
    """One model: an id for the test report and its sources, file name -> text."""

    id: str
    sources: dict[str, str]


def _files(paths: list[Path]) -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in paths}


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _examples() -> Iterator[Model]:
    for folder in sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir()):
        files = sorted(p for p in folder.rglob("*.loom") if p.is_file())  # not `.loom/` builds
        if files:
            yield Model(_rel(folder), _files(files))


def _singles(folder: Path) -> Iterator[Model]:
    for path in sorted(p for p in folder.glob("*.loom") if p.is_file()):
        yield Model(_rel(path), _files([path]))


def _lang_models(folder: Path) -> Iterator[Model]:
    yield from _singles(folder)
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        direct = len([p for p in sub.glob("*.loom") if p.is_file()])
        if direct == 0 or direct >= COLLECTION_SIZE:
            yield from _lang_models(sub)
        else:
            yield Model(_rel(sub), _files(sorted(p for p in sub.rglob("*.loom") if p.is_file())))


def _doc_blocks() -> Iterator[Model]:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        for m in DOC_BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("body")) + 1
            yield Model(f"{_rel(doc)}:{line}", {f"{doc.name}.loom": m.group("body")})


def candidates() -> Iterator[Model]:
    """Every model the repository holds, accepted or not."""
    yield from _examples()
    yield from _singles(ROOT / "tests/conformance")
    yield from _doc_blocks()
    yield from _lang_models(ROOT / "tests/lang")
    yield from _singles(ROOT / "tests/e2e/models")
    yield from _singles(ROOT / "tests/chaos/models")
    yield from _singles(ROOT / "tests/property/models")


def accepted(sources: dict[str, str]) -> ir.Model | None:
    """The model, when `loom check` accepts it (no error; warnings are fine)."""
    result = compile_sources(sources)
    return result.model if result.ok else None


@cache
def corpus() -> tuple[Model, ...]:
    """The candidates `loom check` accepts, each once (the same text in two places counts once)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for model in candidates():
        key = tuple(sorted(model.sources.values()))
        if key in seen or accepted(model.sources) is None:
            continue
        seen.add(key)
        out.append(model)
    return tuple(out)
