"""`var` bindings and `+` on lists (issue 23 §4.6): what lowering makes of them, and the wording of
the diagnostics that steer a body from `let` to `var` (the codes are in data/diagnostics/vars.loom
and syntax_error_var.loom; the service built from them is tests/e2e/test_lists.py)."""

from __future__ import annotations

from pathlib import Path

from loom.lang import compile_files, compile_sources, render_text
from loom.model import ir

LISTS = Path(__file__).resolve().parents[1] / "e2e" / "models" / "lists.loom"

BODY = """
context Shop {
  response Line { amount: int }
  aggregate Order { amount: int }
  repository Orders for Order { find byAmount(amount: int): Order[] }
  queryHandler lines(a: int): Line[] {
    %s
    let orders = Orders.byAmount(a)
    for o in orders { %s }
    return []
  }
}
"""


def handler(c: ir.Context, name: str) -> ir.Handler:
    return next(h for h in c.handlers if h.name == name)


def helps(before: str, inside: str) -> list[tuple[str, str, str | None]]:
    result = compile_sources({"m.loom": BODY % (before, inside)})
    return [(d.code, d.message, d.help) for d in result.diagnostics if d.severity == "error"]


def test_a_var_lowers_to_a_typed_declaration_and_reassignments() -> None:
    result = compile_files([str(LISTS)])
    assert result.model is not None, render_text(result.diagnostics, result.sources)
    (sales,) = result.model.contexts
    body = handler(sales, "ordersOf").body
    out = body[0]
    line = ir.PayloadType("OrderLine", "Sales", "response")
    assert isinstance(out, ir.Var) and out.name == "out"
    assert out.type == ir.ListType(line) and out.value.text == "[]"
    loop = body[2]
    assert isinstance(loop, ir.ForEach)
    notes, inner, append = loop.body
    assert isinstance(notes, ir.Var) and notes.type == ir.INT  # declared afresh per iteration
    assert isinstance(inner, ir.ForEach) and isinstance(inner.body[0], ir.SetLocal)
    assert isinstance(append, ir.SetLocal) and append.name == "out" and append.type == out.type
    join = append.value
    assert isinstance(join, ir.Binary) and join.op == "+" and join.type == ir.ListType(line)
    assert isinstance(join.right, ir.ListLiteral) and isinstance(join.right.items[0], ir.Construct)

    total = handler(sales, "totalOf").body[0]
    # the declared type, not the starting value's (`0` is an int)
    assert isinstance(total, ir.Var) and total.type == ir.DECIMAL


def test_assigning_a_let_suggests_a_var() -> None:
    [(code, message, help)] = helps("let total = 0", "total := total + o.amount")
    assert code == "loom.assign-to-readonly"
    assert message == "cannot assign `total`: a `let` never changes"
    assert help is not None and "`var total = …`" in help


def test_a_handler_is_not_called_a_workflow() -> None:
    [(code, message, help)] = helps("var total = 0", "total += o.amount")
    assert code == "loom.workflow-compound-assign"
    assert message == "`+=` is not allowed in a queryHandler"
    assert help == "write `total := total + …`"
    [(code, message, help)] = helps("", "count := 1")
    assert (code, message) == (
        "loom.workflow-foreign-assign",
        "a queryHandler has no fields to assign",
    )
    assert help is not None and "`var total = 0`" in help


def test_an_empty_list_needs_the_type_of_its_var() -> None:
    [(code, _, help)] = helps("var out = []", "out := out + [Line { amount: o.amount }]")
    assert code == "loom.cannot-infer-type"
    assert help is not None and "`var out: T[] = []`" in help


def test_a_var_keeps_its_type() -> None:
    [(code, message, help)] = helps("var total = 0", "total := total + 0.5")
    assert (code, message) == (
        "loom.type-mismatch",
        "cannot assign a `decimal` to `total`, an `int` var",
    )
    assert help == "declare it a decimal from the start: `var total: decimal = 0`"


def test_an_element_is_not_a_list() -> None:
    [(code, message, help)] = helps("var out: Line[] = []", "out := out + Line { amount: 1 }")
    assert code == "loom.syntax-error"  # a record is a whole value, never an operand
    [(code, message, help)] = helps("var out: int[] = []", "out := out + o.amount")
    assert (code, message) == ("loom.type-mismatch", "cannot join an `int[]` and an `int`")
    assert help == "`+` joins two lists of one element type: `out + [x]` adds one `int`"


def test_a_var_without_a_value_is_a_syntax_error_that_says_so() -> None:
    [(code, _, help)] = helps("var total", "")
    assert code == "loom.syntax-error"
    assert help is not None and help.startswith("a `var` starts with a value: `var total = 0`")
