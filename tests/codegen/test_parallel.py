"""A large model's contexts are generated on two cores (`codegen/python/parallel.py`): the same
files, byte for byte, as generating them all in one process."""

from __future__ import annotations

import os

import pytest

from loom.codegen.python import generate, parallel
from loom.lang import compile_sources


def _model(contexts: int, aggregates: int) -> dict[str, str]:
    def aggregate(c: int, i: int) -> str:
        return f"""
  event Closed{c}_{i} {{ item: Item{c}_{i} id }}
  aggregate Item{c}_{i} {{
    quantity: int = 0
    invariant quantity >= 0
    operation add(n: int) when n > 0 {{ quantity += n }}
    operation close() {{ emit Closed{c}_{i} {{ item: id }} }}
  }}
  repository Items{c}_{i} for Item{c}_{i} {{ }}
  workflow refill{c}_{i} transactional {{
    create(a: Item{c}_{i} id, n: int) {{
      let x = Items{c}_{i}.getById(a)
      x.add(n)
    }}
  }}"""

    return {
        f"area{c}.loom": f"context Area{c} {{{''.join(aggregate(c, i) for i in range(aggregates))}}}"
        for c in range(contexts)
    }


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is what the parallel path uses")
def test_a_large_model_generates_alike_on_two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    result = compile_sources(_model(3, 40))
    assert result.model is not None
    monkeypatch.setattr(parallel, "MIN_WEIGHT", 10)
    monkeypatch.setattr(parallel, "_may_fork", lambda: True)
    forked = generate(result.model, package="svc")
    monkeypatch.setattr(parallel, "_may_fork", lambda: False)
    assert forked == generate(result.model, package="svc")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is what the parallel path uses")
def test_the_second_half_is_done_by_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_may_fork", lambda: True)
    pids = parallel.halves(list(range(4)), lambda _: os.getpid(), weight=lambda _: 100)
    assert pids[:2] == [os.getpid()] * 2
    assert pids[2] == pids[3] != os.getpid()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is what the parallel path uses")
def test_what_the_child_fails_at_is_done_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_may_fork", lambda: True)
    parent = os.getpid()

    def work(x: int) -> int:
        if os.getpid() != parent:
            raise RuntimeError("only in the child")
        return x * 2

    assert parallel.halves(list(range(4)), work, weight=lambda _: 100) == [0, 2, 4, 6]


def test_a_small_model_stays_in_one_process() -> None:
    pids = parallel.halves(list(range(4)), lambda _: os.getpid(), weight=lambda _: 1)
    assert pids == [os.getpid()] * 4
