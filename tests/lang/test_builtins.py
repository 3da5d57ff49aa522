"""The built-in functions in the checker (docs/language.md, "Built-in functions"): their result
types as lowered into the IR, and the helps of a wrong call, which name a function that exists."""

from __future__ import annotations

import pytest

from loom.lang import compile_sources
from loom.model import ir

_MODEL = """context Cover {{
  aggregate Policy {{
    holder: string
    validFrom: date
    validTo: date
    startsAt: datetime
    price: decimal
    cents: decimal(10, 2)[] = []
    waits: duration[] = []
    codes: string[] = []
    note: string?
    derived x: {decl} = {expr}
  }}
}}"""


def _compile(decl: str, expr: str) -> tuple[ir.Derived | None, list[str]]:
    result = compile_sources({"t.loom": _MODEL.format(decl=decl, expr=expr)})
    helps = [d.help or "" for d in result.diagnostics]
    if result.model is None:
        return None, helps
    [agg] = result.model.contexts[0].aggregates
    return agg.derived[0], helps


@pytest.mark.parametrize(
    ("decl", "expr", "type"),
    [
        ("date", "addMonths(validFrom, 1)", ir.DATE),
        ("datetime", "addMonths(startsAt, -1)", ir.DATETIME),
        ("datetime", "addYears(startsAt, 2)", ir.DATETIME),
        ("int", "inDays(validTo - validFrom)", ir.INT),
        ("int", "inSeconds(startsAt - now())", ir.INT),
        ("int", "year(validFrom) + month(startsAt) + day(validTo)", ir.INT),
        ("int", "length(trim(holder))", ir.INT),
        ("bool", 'contains(lower(holder), "x") || startsWith(upper(holder), "Y")', ir.BOOL),
        ("int", "count(codes) + count(cents)", ir.INT),
        ("decimal", "sum(cents)", ir.DECIMAL),
        ("duration", "sum(waits)", ir.DURATION),
        ("bool", 'isPresent(note) && holder in codes && !("x" in codes)', ir.BOOL),
    ],
)
def test_result_types(decl: str, expr: str, type: ir.Type) -> None:
    derived, helps = _compile(decl, expr)
    assert derived is not None, helps
    assert derived.value.type == type


def test_the_first_call_is_lowered_as_a_builtin_call() -> None:
    derived, _ = _compile("date", "addMonths(validFrom, 1)")
    assert derived is not None and isinstance(derived.value, ir.BuiltinCall)
    assert derived.value.function == "addMonths"
    assert [a.type for a in derived.value.args] == [ir.DATE, ir.INT]


@pytest.mark.parametrize(
    ("decl", "expr", "help"),
    [
        ("int", "validTo - validFrom", "count it with `inDays(validTo - validFrom)`"),
        ("decimal", "price * (validTo - validFrom)", "`inDays(d)`"),
        ("date", "addMonths(validFrom)", "write e.g. `addMonths(validFrom, 1)`"),
        ("int", "inDays(validTo)", "write e.g. `inDays(validTo - validFrom)`"),
        ("bool", '"x" in holder', 'write `contains(holder, "x")`'),
        ("bool", "isPresent(holder)", "`holder` is always present"),
        ("int", "count(note)", "write e.g. `count(lines)`"),
    ],
)
def test_helps_name_a_function_that_exists(decl: str, expr: str, help: str) -> None:
    _, helps = _compile(decl, expr)
    assert any(help in h for h in helps), helps


def test_a_sum_keeps_the_scale_of_its_elements_not_their_precision() -> None:
    derived, helps = _compile("decimal", "sum(cents)")
    assert derived is not None, helps
    assert isinstance(derived.value, ir.BuiltinCall)
    assert isinstance(derived.value.type, ir.PrimitiveType)
    assert (derived.value.type.scale, derived.value.type.precision) == (2, None)


def test_membership_is_a_binary_in() -> None:
    derived, _ = _compile("bool", "holder in codes")
    assert derived is not None and isinstance(derived.value, ir.Binary)
    assert derived.value.op == "in"
    assert derived.value.right.type == ir.ListType(ir.STRING)
