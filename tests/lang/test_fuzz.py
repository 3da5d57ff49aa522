"""Crash-freedom: whatever the text, the compiler answers with registered diagnostics, never a raise.

Inputs are random text and random edits (deletions, duplications, swaps of tokens) of the example
models, which reach far deeper into the checker than random text does. Every crash found this way
gets a regression model in data/diagnostics/regressions/.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom.lang import REGISTRY, compile_sources

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [
    ROOT / "examples/banking/banking.loom",
    ROOT / "examples/sales/sales.loom",
    *sorted((Path(__file__).parent / "data" / "ok").glob("*.loom")),
    # The diagnostics cases start from broken models, so their edits reach the error paths.
    *sorted((Path(__file__).parent / "data" / "diagnostics").glob("*.loom")),
]
TEXTS = [p.read_text() for p in EXAMPLES]
TOKEN = re.compile(
    r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\"(?:[^\"\\\n]|\\.)*\"|:=|\+=|-=|"
    r"==|!=|<=|>=|&&|\|\||//[^\n]*|.",
    re.DOTALL,
)


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


TOKENS = [tokens(t) for t in TEXTS]
VOCAB = sorted({t for ts in TOKENS for t in ts if t.strip()})


@st.composite
def mutated(draw: st.DrawFn) -> str:
    toks = list(draw(st.sampled_from(TOKENS)))
    for _ in range(draw(st.integers(1, 4))):
        if not toks:
            break
        i = draw(st.integers(0, len(toks) - 1))
        j = draw(st.integers(i, min(len(toks), i + 12)))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "replace", "insert"]))
        if op == "delete":
            del toks[i:j]
        elif op == "duplicate":
            toks[i:i] = toks[i:j]
        elif op == "swap":
            k = draw(st.integers(0, len(toks) - 1))
            toks[i], toks[k] = toks[k], toks[i]
        elif op == "replace":
            toks[i] = draw(st.sampled_from(VOCAB))
        else:
            toks.insert(i, " " + draw(st.sampled_from(VOCAB)) + " ")
    return "".join(toks)


def assert_answers(text: str) -> None:
    result = compile_sources({"fuzz.loom": text})
    for d in result.diagnostics:
        assert d.code in REGISTRY
        assert d.code != "loom.internal-error", d.message
    assert result.ok == (result.model is not None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_examples_never_crash(text: str) -> None:
    assert_answers(text)


@settings(max_examples=50, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list('context{}()[]:=+-*/%<>!&|?.,"\\ \n\tabXY019_')), max_size=200
    )
)
def test_random_text_never_crashes(text: str) -> None:
    assert_answers(text)


def test_deep_nesting_is_an_answer_not_a_crash() -> None:
    deep = "(" * 3000 + "1" + ")" * 3000
    result = compile_sources({"deep.loom": f"context A {{ aggregate B {{ n: int = {deep} }} }}"})
    assert [d.code for d in result.diagnostics] in ([], ["loom.nesting-too-deep"])
