"""The expression renderer on hand-built IR."""

from __future__ import annotations

import ast
from decimal import Decimal

import pytest

from loom.codegen.python.expressions import Scope, render, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.literals import py_str
from loom.model import ir
from loom.runtime import decimals

INT, DEC, BOOL, STR = ir.INT, ir.DECIMAL, ir.BOOL, ir.STRING
KIND = ir.EnumType("AccountKind", "Banking")


def lit(value: object, t: ir.Type = INT) -> ir.Literal_:
    return ir.Literal_(value, t, str(value))  # type: ignore[arg-type]


def p(name: str, t: ir.Type = INT) -> ir.Param:
    return ir.Param(name, t, name)


def f(name: str, t: ir.Type = INT) -> ir.SelfField:
    return ir.SelfField(name, t, name)


def b(op: str, left: ir.Expr, right: ir.Expr, t: ir.Type = INT) -> ir.Binary:
    return ir.Binary(op, left, right, t, f"{left.text} {op} {right.text}")  # type: ignore[arg-type]


def scope() -> Scope:
    return Scope(imports=Imports(), enum_ref=lambda name, ctx: name)


def r(expr: ir.Expr) -> str:
    text = render(expr, scope())
    ast.parse(text, mode="eval")  # always valid Python
    return text


def test_literals() -> None:
    assert r(lit(12)) == "12"
    assert r(lit("12.50", DEC)) == 'Decimal("12.50")'
    assert r(lit(True, BOOL)) == "True"
    assert r(lit(None, ir.OptionalType(STR))) == "None"
    assert r(lit('say "hi"', STR)) == "'say \"hi\"'"
    assert r(lit("a\\b\n", STR)) == '"a\\\\b\\n"'


def test_precedence_and_associativity() -> None:
    a, c, d = p("a"), p("c"), p("d")
    assert r(b("-", a, b("-", c, d))) == "a - (c - d)"
    assert r(b("-", b("-", a, c), d)) == "a - c - d"
    assert r(b("*", b("+", a, c), d)) == "(a + c) * d"
    assert r(b("+", a, b("*", c, d))) == "a + c * d"
    assert r(ir.Unary("-", b("+", a, c), INT, "-(a + c)")) == "-(a + c)"


def test_comparisons_never_chain() -> None:
    a, c = p("a"), p("c")
    lt = b("<", a, c, BOOL)
    assert r(b("==", lt, p("flag", BOOL), BOOL)) == "(a < c) == flag"


def test_boolean_operators() -> None:
    x, y, z = p("x", BOOL), p("y", BOOL), p("z", BOOL)
    assert r(b("&&", x, b("||", y, z, BOOL), BOOL)) == "x and (y or z)"
    assert r(b("||", b("&&", x, y, BOOL), z, BOOL)) == "x and y or z"
    assert r(ir.Unary("!", b("&&", x, y, BOOL), BOOL, "!(x && y)")) == "not (x and y)"
    neg_eq = b("==", ir.Unary("!", x, BOOL, "!x"), y, BOOL)
    assert r(neg_eq) == "(not x) == y"


def test_conditional() -> None:
    cond = b("==", f("kind", KIND), ir.EnumMember("AccountKind", "Savings", KIND, "Savings"), BOOL)
    expr = ir.Conditional(cond, lit(1), lit(0), INT, "kind == Savings ? 1 : 0")
    assert r(expr) == "1 if self.kind == AccountKind.SAVINGS else 0"
    nested = b("+", expr, lit(2))
    assert r(nested) == "(1 if self.kind == AccountKind.SAVINGS else 0) + 2"


def test_decimal_arithmetic() -> None:
    s = scope()
    mixed = b("+", p("price", DEC), p("qty"), DEC)
    assert render(mixed, s) == "decimals.add(price, qty)"
    assert "decimals" in s.imports.froms["loom.runtime"]
    assert r(b("/", p("a"), p("c"), DEC)) == "decimals.div(a, c)"
    assert r(b("*", lit("1.5", DEC), lit(2), DEC)) == 'decimals.mul(Decimal("1.5"), 2)'
    assert r(b("%", p("a"), p("c"), INT)) == "decimals.int_rem(a, c)"
    assert r(ir.Unary("-", p("price", DEC), DEC, "-price")) == "decimals.neg(price)"
    assert r(ir.Unary("-", lit("1.5", DEC), DEC, "-1.5")) == 'Decimal("-1.5")'
    assert r(b("*", p("a"), p("c"), INT)) == "a * c"
    assert render_as(p("n"), DEC, scope()) == "Decimal(n)"
    assert render_as(p("n"), INT, scope()) == "n"


def test_decimal_division_is_exact() -> None:
    text = r(b("/", p("a"), p("c"), DEC))
    assert eval(text, {"decimals": decimals, "a": 1, "c": 4}) == Decimal("0.25")


def test_strings_now_lists_members() -> None:
    s = scope()
    concat = b("+", p("first", STR), b("+", lit(" ", STR), p("n"), STR), STR)
    assert render(concat, s) == 'first + (" " + str(n))'
    assert render(ir.Now(ir.DATETIME, "now()"), s) == "now()"
    assert "now" in s.imports.froms["loom.runtime"]
    items = ir.ListLiteral((p("a", STR), lit("b", STR)), ir.ListType(STR), '[a, "b"]')
    assert render(items, s) == '[a, "b"]'
    member = ir.Member(
        ir.Local("source", ir.AggregateType("Account", "B"), "source"),
        "openedAt",
        ir.DATETIME,
        "source.openedAt",
    )
    assert render(member, s) == "source.opened_at"
    assert render(ir.Param("from", INT, "from"), s) == "from_"


def test_none_comparison_uses_is() -> None:
    opt = p("email", ir.OptionalType(STR))
    assert r(b("==", opt, lit(None, ir.OptionalType(STR)), BOOL)) == "email is None"
    assert r(b("!=", opt, lit(None, ir.OptionalType(STR)), BOOL)) == "email is not None"


@pytest.mark.parametrize(
    "text", ["plain", 'with "double"', "with 'single'", "both ' and \"", "tab\there", "é ü"]
)
def test_py_str_round_trips(text: str) -> None:
    assert ast.literal_eval(py_str(text)) == text
