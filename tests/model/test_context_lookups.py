"""A context's look-ups by name: indexed once (generating a large context looked up each
declaration by scanning all of them), answering what a scan in declaration order would."""

from __future__ import annotations

import dataclasses

import pytest

from loom.lang import compile_sources
from loom.model import ir

MODEL = """
context Shop {
  event Closed { item: Item id }
  event Opened { item: Item id }
  aggregate Item { quantity: int = 0 }
  aggregate Order { total: int = 0 }
  repository Items for Item { }
  criterion Big of Item = quantity > 10
  criterion Small of Item = quantity < 2
  criterion Large of Order = total > 100
  retrieval Bigs of Item { where: Big }
}
"""


@pytest.fixture(scope="module")
def shop() -> ir.Context:
    result = compile_sources({"shop.loom": MODEL})
    assert result.ok and result.model is not None, result.diagnostics
    return result.model.contexts[0]


def test_lookups_answer_the_declarations(shop: ir.Context) -> None:
    assert shop.aggregate("Order") is shop.aggregates[1]
    assert shop.event("Opened") is shop.events[1]
    assert shop.repository("Items") is shop.repositories[0]
    assert shop.repository_for("Item") is shop.repositories[0]
    assert shop.repository_for("Order") is None
    assert shop.criterion("Large").aggregate == "Order"
    assert shop.retrieval("Bigs").criterion == "Big"
    assert [c.name for c in shop.criteria_of("Item")] == ["Big", "Small"]
    assert [r.name for r in shop.retrievals_of("Order")] == []
    with pytest.raises(KeyError):
        shop.aggregate("Nope")


def test_the_index_is_no_part_of_the_value(shop: ir.Context) -> None:
    shop.aggregate("Item")  # the index filled
    fresh = dataclasses.replace(shop)
    assert fresh == shop and hash(fresh) == hash(shop)
    assert "_index" not in repr(shop)
    assert fresh.criteria_of("Item") == shop.criteria_of("Item")
