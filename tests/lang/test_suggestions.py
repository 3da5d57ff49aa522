""" "Did you mean" picks the kind of name the position asks for."""

from __future__ import annotations

from loom.lang import compile_sources

MODEL = """
context Shop {
  aggregate Item { name: string }
  repository Items for Item { }
  workflow buy {
    create(item: Item id) {
      let i = Itemz.getById(item)
    }
  }
}
"""


def test_a_read_suggests_the_repository_over_the_aggregate() -> None:
    # `Itemz` is one edit from both `Item` and `Items`; `getById` is a repository read.
    [d] = [d for d in compile_sources({"shop.loom": MODEL}).diagnostics if d.severity == "error"]
    assert d.code == "loom.workflow-unknown-name"
    assert d.help == "did you mean `Items`?"


def test_null_says_that_loom_has_none() -> None:
    """`= null` and `:= null` (no such literal): the help says how an optional field is absent."""
    model = """
context Shop {
  aggregate Item {
    note: string? = null
    operation clear() { note := null }
  }
}
"""
    found = compile_sources({"shop.loom": model}).diagnostics
    assert [(d.code, d.span.line) for d in found] == [
        ("loom.unknown-name", 4),
        ("loom.unknown-name", 5),
    ]
    for d in found:
        assert d.help is not None and d.help.startswith("Loom has no null literal"), d.help
        assert "leave out `= null`" in d.help
