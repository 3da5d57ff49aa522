"""`loom fmt` never changes what a file means: the syntax tree of the formatted text is the
original's, spans aside, and formatting it again changes nothing. Checked over every `.loom` file
and docs' `loom` block of the repository, and over generated texts: those files with their
whitespace redrawn at random and comments added, and the fuzz tests' random edits of the example
models."""

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
from loom.lang.syntax.scan import Tokens
from tests.lang.test_fuzz import mutated
from tests.property.corpus import DOC_BLOCK

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted(
    p for top in ("examples", "tests", "bench") for p in (ROOT / top).rglob("*.loom") if p.is_file()
)
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXTS = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8-sig") for p in FILES} | {
    f"{doc.name}#{n}": m["body"]
    for doc in DOCS
    for n, m in enumerate(DOC_BLOCK.finditer(doc.read_text()))
}
PARSED = {name: text for name, text in TEXTS.items() if format_source(text).text is not None}
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


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


def regap(text: str, rng: random.Random) -> str:
    """`text` with every gap between its tokens redrawn: spaces, tabs, line breaks, blank lines,
    its comments kept in order (a line comment keeps the line break after it), and now and then a
    comment added."""
    tokens = Tokens(text)
    out: list[str] = []
    end = 0
    for start, token in zip(tokens.offsets, tokens.texts, strict=True):
        comments = COMMENT.findall(text, end, start)
        if rng.random() < 0.1:
            comments.append(rng.choice(["/* x */", "// y", "/* m\n  n */"]))
        for comment in comments:
            out.append(_space(rng, out) + comment)
        out.append(_space(rng, out) + token)
        end = start + len(token)
    return "".join(out)


def _space(rng: random.Random, out: list[str]) -> str:
    """A gap to follow `out`: a line break after a line comment, else any whitespace."""
    after_line_comment = bool(out) and out[-1].lstrip().startswith("//")
    return "\n" if after_line_comment else rng.choice([" ", "\n", "\t ", "\n\n\n  "])


@st.composite
def redrawn(draw: st.DrawFn) -> str:
    """A model of the repository with its whitespace redrawn (`regap`)."""
    text = draw(st.sampled_from(sorted(PARSED.values())))
    return regap(text, draw(st.randoms(use_true_random=False)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(redrawn())
def test_redrawn_whitespace_keeps_the_meaning(text: str) -> None:
    assert format_source(text).text is not None  # whitespace and comments never break a parse
    assert_same_meaning(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_random_edits_keep_the_meaning_or_do_not_parse(text: str) -> None:
    assert_same_meaning(text)
