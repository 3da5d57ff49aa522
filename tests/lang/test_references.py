"""`Facts.references`: each name a body resolves to a declaration, recorded for editors (loom.lsp).

Over every example model: a reference names what it points at (the same text at both spans), and
every kind of name a body writes is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.lang.compiler import analyse_sources
from loom.lang.diagnostics import Span

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.is_dir())


def _text(sources: dict[str, str], span: Span) -> str:
    return sources[span.file][span.start : span.end]


@pytest.mark.parametrize("folder", EXAMPLES, ids=lambda p: p.name)
def test_every_reference_names_its_declaration(folder: Path) -> None:
    sources = {str(p): p.read_text() for p in sorted(folder.glob("*.loom")) if p.is_file()}
    result, stages = analyse_sources(sources)
    assert result.ok
    assert stages.facts is not None
    refs = stages.facts.references
    assert refs
    for ref in refs:
        assert _text(sources, ref.span) == _text(sources, ref.target), ref


def test_the_names_of_bodies_are_recorded() -> None:
    text = """context Shop {
  enum Status { Open, Shut }
  aggregate Cart {
    total: int
    status: Status = Open
    operation add(n: int) when status == Status.Open {
      total += n
      bump()
      emit Added { cart: id, total: total }
    }
    operation bump() { total += 1 }
  }
  repository Carts for Cart { }
  event Added { cart: Cart id, total: int }
  workflow fill {
    create(cart: Cart id) {
      let c = Carts.getById(cart)
      c.add(1)
    }
  }
}
"""
    _, stages = analyse_sources({"shop.loom": text})
    assert stages.facts is not None
    found = {
        (text[r.span.start : r.span.end], text[: r.target.start].count("\n") + 1)
        for r in stages.facts.references
    }
    assert found >= {
        ("Open", 2),  # a bare enum member, and `Status.Open`'s
        ("Status", 2),
        ("status", 5),  # a field read
        ("total", 4),  # a field written
        ("bump", 11),  # an own operation called
        ("Added", 14),  # an emitted event
        ("cart", 14),  # a field of an emit
        ("Carts", 13),  # a repository
        ("add", 6),  # an operation called on a local
    }
    assert all(text[r.span.start : r.span.end] != "id" for r in stages.facts.references)
