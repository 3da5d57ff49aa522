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


def test_a_visibility_word_cannot_name_a_field() -> None:
    """`private`, `internal` and `public` begin an operation at the start of an aggregate member,
    so a field of that name is a syntax error whose help says so (not a record hint)."""
    for word in ("private", "internal", "public"):
        model = f"context Shop {{\n  aggregate Item {{\n    {word}: int = 0\n  }}\n}}\n"
        [d] = compile_sources({"shop.loom": model}).diagnostics
        assert (d.code, d.span.line) == ("loom.syntax-error", 3)
        assert d.help is not None and d.help.startswith(f"`{word}` at the start of"), d.help


def test_public_marks_a_route_meant_beside_the_workflow() -> None:
    """`public operation` and `public extern operation` parse, and silence the bypass warning."""
    model = """
context Bank {
  aggregate Account {
    balance: int = 0
    public operation deposit(n: int) { balance += n }
    public extern operation audit()
    operation withdraw(n: int) { balance -= n }
  }
  repository Accounts for Account { }
  workflow transfer transactional {
    create(from: Account id, to: Account id, n: int) {
      let a = Accounts.getById(from)
      let b = Accounts.getById(to)
      a.withdraw(n)
      b.deposit(n)
      b.audit()
    }
  }
}
"""
    found = compile_sources({"bank.loom": model}).diagnostics
    assert [(d.code, d.span.line) for d in found] == [("loom.operation-bypasses-workflow", 7)]
    assert [label for _, label in found[0].secondary] == [
        "called by the command of workflow `transfer` here"
    ]
