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
