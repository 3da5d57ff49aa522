"""`loom fmt` never changes what a file means: the syntax tree of the formatted text is the
original's, spans aside, and formatting it again changes nothing. Checked over every `.loom` file
and docs' `loom` block of the repository, and over generated texts: those files with their
whitespace redrawn at random, and the fuzz tests' random edits of the example models."""

from __future__ import annotations

import dataclasses
import random
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom.lang.diagnostics import Sink, Span
from loom.lang.format import format_source
from loom.lang.syntax import parse
from tests.lang.test_fuzz import mutated
from tests.property.corpus import DOC_BLOCK

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(p for top in ("examples", "tests", "bench") for p in (ROOT / top).rglob("*.loom"))
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXTS = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8-sig") for p in FILES} | {
    f"{doc.name}#{n}": m["body"]
    for doc in DOCS
    for n, m in enumerate(DOC_BLOCK.finditer(doc.read_text()))
}
PARSED = {name: text for name, text in TEXTS.items() if format_source(text).text is not None}
# what separates tokens: spaces, line breaks, comments
GAP = re.compile(r"(?:\s|//[^\n]*|/\*.*?\*/)+", re.DOTALL)


_CLOSE = object()


def shape(root: object) -> list[object]:
    """A tree as a flat list, its spans left out: what the file means. Flat and built without
    recursion, as regressions/deep_expression.loom (1+1+…+1) nests too deep for a recursive walk."""
    out: list[object] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node is _CLOSE:
            out.append(")")
        elif isinstance(node, Span):
            out.append(None)
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            out.append(type(node).__name__)
            stack.append(_CLOSE)
            stack += reversed([getattr(node, f.name) for f in dataclasses.fields(node)])
        elif isinstance(node, list | tuple | dict):
            items = sorted(node.items()) if isinstance(node, dict) else node
            out.append("(")
            stack.append(_CLOSE)
            stack += reversed(list(items))
        else:
            out.append(node)
    return out


def tree(text: str) -> list[object]:
    sink = Sink()
    files = parse({"m.loom": text}, sink).files
    assert not sink.has_errors, sink.items
    return shape(files[0])


def assert_same_meaning(text: str) -> None:
    formatted = format_source(text).text
    if formatted is None:  # does not parse: nothing to compare
        assert tree_fails(text)
        return
    assert tree(formatted) == tree(text)
    assert format_source(formatted).text == formatted


def tree_fails(text: str) -> bool:
    sink = Sink()
    parse({"m.loom": text}, sink)
    return sink.has_errors


def test_the_repository_holds_models_to_format() -> None:
    assert len(PARSED) > 300 and any(name.endswith(".md#0") for name in PARSED)


@pytest.mark.parametrize("name", sorted(PARSED))
def test_formatting_keeps_the_meaning(name: str) -> None:
    assert_same_meaning(PARSED[name])


@st.composite
def redrawn(draw: st.DrawFn) -> str:
    """A model of the repository with every gap between tokens redrawn: no space where one may go,
    or spaces, tabs, line breaks, blank lines (a line comment keeps the line break after it)."""
    text = draw(st.sampled_from(sorted(PARSED.values())))
    rng: random.Random = draw(st.randoms(use_true_random=False))

    def gap(m: re.Match[str]) -> str:
        comments = re.findall(r"//[^\n]*|/\*.*?\*/", m[0], re.DOTALL)
        pieces = [rng.choice([" ", "\n", "\t ", "\n\n\n   "]) + c for c in comments]
        end = rng.choice([" ", "\n", "  \n\t", "\n\n"])
        after_line_comment = bool(comments) and comments[-1].startswith("//")
        return "".join(pieces) + ("\n" if after_line_comment else end)

    return GAP.sub(gap, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(redrawn())
def test_redrawn_whitespace_keeps_the_meaning(text: str) -> None:
    assert_same_meaning(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_random_edits_keep_the_meaning_or_do_not_parse(text: str) -> None:
    assert_same_meaning(text)
