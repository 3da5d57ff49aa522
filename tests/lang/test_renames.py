"""`renamed from` in the model (issue 11 §2) and defaults of event fields (§4): what the syntax
accepts, where, and what the IR carries for the migration engine and the generated service."""

from __future__ import annotations

import pytest

from loom.lang import compile_sources, render_text
from loom.model import ir

MODEL = """
context Bank {
  enum Status { Active, Closed renamed from Shut, renamed }
  aggregate Client renamed from Customer with crudish {
    fullName: string renamed from name
    nickname: string immutable renamed from alias = ""
    other: string
    renamed: int = 0
  }
  event Deposited renamed from Credited {
    account: Client id
    amount: int
    source: string renamed from origin = "web"
    renamed: bool = false
  }
  aggregate Account {
    balance: int
    renamed: Status = Active
    operation deposit(amount: int, c: Client id) {
      balance += amount
      emit Deposited { account: c, amount: amount }
    }
  }
  workflow Follow {
    account: Client id
    seen: int renamed from count = 0
    renamed: int = 0
    on(e: Deposited) by e.account { seen := seen + 1 }
  }
  projection Totals {
    client: Client id renamed from customer
    total: int = 0
    renamed: int = 0
    on(e: Deposited) by e.account { total := total + e.amount }
  }
}
"""


def compiled(text: str) -> ir.Context:
    result = compile_sources({"m.loom": text})
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model.contexts[0]


def test_the_ir_carries_every_rename() -> None:
    c = compiled(MODEL)
    (status,) = c.enums
    assert status.members == ("Active", "Closed", "renamed")
    assert status.renamed_from == (("Closed", "Shut"),)
    assert status.old_name("Closed") == "Shut" and status.old_name("Active") is None
    client = c.aggregate("Client")
    assert client.renamed_from == "Customer" and client.crudish
    assert [(f.name, f.renamed_from) for f in client.fields] == [
        ("fullName", "name"),
        ("nickname", "alias"),
        ("other", None),
        ("renamed", None),
    ]
    assert client.fields[1].immutable and client.fields[1].default is not None
    (event,) = c.events
    assert event.renamed_from == "Credited"
    assert [(f.name, f.renamed_from) for f in event.fields] == [
        ("account", None),
        ("amount", None),
        ("source", "origin"),
        ("renamed", None),
    ]
    (wf,) = c.workflows
    assert [(f.name, f.renamed_from) for f in wf.state] == [
        ("account", None),
        ("seen", "count"),
        ("renamed", None),
    ]
    (proj,) = c.projections
    assert proj.fields[0].renamed_from == "customer"


def test_an_emit_that_leaves_out_a_defaulted_field_gives_the_default() -> None:
    c = compiled(MODEL)
    (_, emit) = c.aggregate("Account").operations[0].body
    assert isinstance(emit, ir.Emit)
    args = dict(emit.args)
    assert list(args) == ["account", "amount", "source", "renamed"]  # the event's order
    assert args["source"] == ir.Literal_("web", ir.STRING, '"web"')
    assert isinstance(args["renamed"], ir.Literal_) and args["renamed"].value is False


def test_a_field_named_renamed_stays_a_name_everywhere() -> None:
    # right after another field's type (where `renamed from` could start) it is still a field
    c = compiled("context C { aggregate A { x: string\n renamed: int\n y: int } }")
    assert [f.name for f in c.aggregate("A").fields] == ["x", "renamed", "y"]
    # and in an expression, a parameter, a local
    c = compiled(
        "context C { aggregate A { renamed: int\n operation f(from: int) {"
        " let renamedTwice = renamed + from\n renamed := renamedTwice } } }"
    )
    assert [f.name for f in c.aggregate("A").fields] == ["renamed"]


def test_renamed_from_spans_lines() -> None:
    c = compiled("context C { aggregate A renamed\n  from B { x: int renamed\n from y } }")
    assert c.aggregate("A").renamed_from == "B"
    assert c.aggregate("A").fields[0].renamed_from == "y"


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ('aggregate A { x: string renamed from y immutable = "" }', "`immutable` comes before"),
        ("aggregate A { x: string renamed from y immutable }", "`immutable` comes before"),
        ('aggregate A { x: string = "" renamed from y }', "before its default"),
        ("aggregate A with crudish renamed from B { x: string }", "right after a declaration"),
        ("event E { a: int } renamed from F", "right after a declaration"),
    ],
)
def test_renamed_from_out_of_place_says_where_it_goes(text: str, hint: str) -> None:
    result = compile_sources({"m.loom": "context C {\n" + text + "\n}"})
    (d,) = result.diagnostics
    assert d.code == "loom.syntax-error"
    assert d.help is not None and hint in d.help, d.help
