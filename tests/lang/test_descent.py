"""The fast parser (`syntax/descent.py`) against lark's (`syntax/reduce.py`): wherever the fast one
answers, lark accepts the text too and builds the same tree with the same diagnostics; where lark
refuses a text, the fast one never answers. Checked on every model in the repository, on random
edits of them (the fuzz tests' mutations) and on the places where lark's contextual lexer reads a
word as a keyword that a name could be.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from lark.exceptions import UnexpectedInput

from loom.lang.diagnostics import Sink
from loom.lang.syntax import descent, reduce, scan
from loom.lang.syntax.scan import Tokens
from loom.lang.syntax.tree_to_ast import Build

from .test_fuzz import mutated

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted(
    p for folder in ("examples", "tests") for p in (ROOT / folder).rglob("*.loom") if p.is_file()
)


def _difference(a: Any, b: Any) -> str | None:
    """Where two syntax trees differ (their nodes compare by identity, so field by field; with a
    stack of its own, as a model may nest deeper than Python's)."""
    todo: list[tuple[Any, Any, str]] = [(a, b, "file")]
    while todo:
        x, y, path = todo.pop()
        if type(x) is not type(y):
            return f"{path}: {type(x).__name__} vs {type(y).__name__}"
        if dataclasses.is_dataclass(x):
            todo += [
                (getattr(x, f.name), getattr(y, f.name), f"{path}.{f.name}")
                for f in dataclasses.fields(x)
            ]
        elif isinstance(x, dict):
            if x.keys() != y.keys():
                return f"{path}: keys {sorted(x)} vs {sorted(y)}"
            todo += [(x[k], y[k], f"{path}[{k!r}]") for k in x]
        elif isinstance(x, list | tuple):
            if len(x) != len(y):
                return f"{path}: {len(x)} items vs {len(y)}"
            todo += [(u, v, f"{path}[{i}]") for i, (u, v) in enumerate(zip(x, y, strict=True))]
        elif x != y:
            return f"{path}: {x!r} vs {y!r}"
    return None


def _both(text: str) -> tuple[Any, Sink, Any, Sink]:
    fast_sink, lark_sink = Sink(), Sink()
    fast = descent.parse(text, Build("m.loom", fast_sink))
    try:
        slow = reduce.parse(text, Build("m.loom", lark_sink))
    except UnexpectedInput:
        slow = None
    return fast, fast_sink, slow, lark_sink


def assert_agrees(text: str) -> bool:
    """Whether the fast parser answered (and, when it did, that it agrees with lark)."""
    fast, fast_sink, slow, lark_sink = _both(text)
    if fast is None:
        return False
    assert slow is not None, "the fast parser accepted a text lark refuses"
    assert _difference(fast, slow) is None, _difference(fast, slow)
    assert repr(fast_sink.items) == repr(lark_sink.items)
    return True


@pytest.mark.parametrize("path", MODELS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_model_parses_alike(path: Path) -> None:
    assert_agrees(path.read_text(encoding="utf-8-sig"))


def test_the_fast_parser_takes_every_valid_model() -> None:
    # names spelled like keywords included (`handle: string`, `event: string`, `Svc.value(…)`)
    valid = [p for p in MODELS if _both(p.read_text(encoding="utf-8-sig"))[2] is not None]
    assert len(valid) > 200
    assert [p for p in valid if not assert_agrees(p.read_text(encoding="utf-8-sig"))] == []


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_edited_models_parse_alike(text: str) -> None:
    assert_agrees(text)


@pytest.mark.parametrize(
    "text",
    [
        # lark reads `on` after a field's type as the keyword (the state is shared with workflows)
        "context A { aggregate B { n: int\n on: bool } }",
        "context A { workflow W { on: bool\n create() { } } }",
        "context A { command C { event: string, handle: string } }",  # names there
        "context A { aggregate B { n: int\n id: int } }",  # `id` after a type is its mark
        # a keyword lark reserves nowhere near: a name
        "context A { event E { item: B id }\n aggregate B { operation f() { emit E { item: id } } } }",
        "context A { aggregate B { n: int = 1\n -2 } }",  # greedy, as lark's shift
        'context A { workflow W { create() { notFound "x" } } }',
        "context A { aggregate B { n: int = a < b < c } }",  # comparisons do not chain
        "context A { aggregate B { n: int = 1 } } // the end",
        "context A { aggregate B { n: int = 1 } } /* open",
        "context A { aggregate B { n: int = 1 # } }",
        'context A { aggregate B { s: string = "open\n" } }',
        "context A { channel Out { backoff: 1s .. 5m } }",
        "context A { channel Out { maxAttempts: 1.5 } }",
        "context A { aggregate B { n: int = 5s } }",
        "context A { aggregate B { n: string(-1, 2,) } }",
        "context A { agregate B { } }",
        "context A { aggregate B renamed from C { n: int immutable renamed from m = 1 } }",
        "context A { aggregate B { n: int renamed\n   from m } }",  # one token over two lines
        "context A { aggregate B { renamed: int\n n: int } }",
        "context A { aggregate B { n: int = 1 renamed from m } }",
        "context A { event E renamed from F { a: int renamed from b = 1, c: string } }",
        "context A { enum E { Open renamed from Opened, Shut } }",
        "context A { enum E { Open, Shut terminal, Gone terminal renamed from Lost, terminal } }",
        "context A { enum E { terminal terminal } }",  # a member called `terminal`, terminal
        "context A { enum E { Open terminal terminal } }",
        "context A { enum E { Open renamed from Opened terminal } }",  # `terminal` comes first
        "",
        # the topology beside the contexts: words, not keywords (tree_to_ast checks them)
        "deployable D { contexts: A, B }\nchannelSource S { kind: nats }\ncontext A { }",
        "context A { channel C { carries: E  source: S } }\nchannelSource S { kind: redis }",
        "context A { aggregate B { deployable: int\n channelSource: string } }",
        "context A { } deployable context { contexts: A }",  # `context` is a name there
        "deployable D { contexts: A.B, 3  backoff: 1s .. 2s }",
        "deploable D { contexts: A }",
        "deployable D { contexts: }",
        "deployable D contexts: A }",
    ],
)
def test_edge_cases_parse_alike(text: str) -> None:
    assert_agrees(text)


def test_the_fast_parser_reads_the_topology() -> None:
    text = "deployable D { contexts: A }\nchannelSource S { kind: nats }\ncontext A { }"
    assert assert_agrees(text)  # answered, not given up on
    tree = descent.parse(text, Build("m.loom", Sink()))
    assert [d.name for d in tree.deployables] == ["D"]
    assert [c.name for c in tree.channel_sources] == ["S"]
    assert [c.name for c in tree.contexts] == ["A"]


def test_a_deep_expression_is_left_to_lark() -> None:
    deep = "(" * 3000 + "1" + ")" * 3000
    text = f"context A {{ aggregate B {{ n: int = {deep} }} }}"
    assert descent.parse(text, Build("m.loom", Sink())) is None


def test_tokens_carry_lark_positions() -> None:
    tokens = Tokens('a /* x\n y */ b:=c..d\n  "s" // z\n')
    assert list(zip(tokens.kinds, tokens.texts, tokens.lines, tokens.columns, strict=True)) == [
        ("NAME", "a", 1, 1),
        ("NAME", "b", 2, 7),
        (":=", ":=", 2, 8),
        ("NAME", "c", 2, 10),
        ("..", "..", 2, 11),
        ("NAME", "d", 2, 13),
        ("STRING", '"s"', 3, 3),
        ("$END", "", 4, 1),
    ]


def test_the_scanner_tables_are_kept_and_rebuilt_when_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    scan.grammar.cache_clear()
    try:
        derived = scan.grammar()
        (kept,) = tmp_path.glob("loom-scan-*.json")
        scan.grammar.cache_clear()
        assert scan.grammar() == derived  # read back from the file
        kept.write_text("{not json")
        scan.grammar.cache_clear()
        assert scan.grammar() == derived
        assert json.loads(kept.read_text())["keywords"] == sorted(derived.keywords)
    finally:
        scan.grammar.cache_clear()


def test_a_model_that_parses_never_loads_lark() -> None:
    code = (
        "import sys; from loom.lang import compile_files; "
        f"assert compile_files([{str(ROOT / 'examples/banking/banking.loom')!r}]).ok; "
        "print('lark' in sys.modules)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        for _ in range(2)  # the first may build the scanner's tables with lark
    ]
    assert runs[-1].stdout.strip() == "False"
