"""The type relations of the checker, as the language reference states them."""

from __future__ import annotations

import pytest

from loom.lang.types import ERROR, assignable, comparable, join, ordered, show
from loom.model import ir

A_ID = ir.IdType("Account", "Bank")
C_ID = ir.IdType("Customer", "Bank")
KIND = ir.EnumType("Kind", "Bank")
STRINGS = ir.ListType(ir.STRING)


@pytest.mark.parametrize(
    ("value", "target", "ok"),
    [
        (ir.INT, ir.DECIMAL, True),  # int widens
        (ir.DECIMAL, ir.INT, False),  # never narrows
        (ir.STRING, ir.OptionalType(ir.STRING), True),  # T fits T?
        (ir.OptionalType(ir.STRING), ir.STRING, False),
        (ir.INT, ir.OptionalType(ir.DECIMAL), True),
        (A_ID, A_ID, True),
        (C_ID, A_ID, False),  # X id only to X id
        (ir.STRING, A_ID, False),
        (KIND, ir.STRING, False),
        (STRINGS, ir.OptionalType(STRINGS), True),
        (ir.ListType(ir.INT), ir.ListType(ir.DECIMAL), True),
        (ir.ListType(ir.DECIMAL), ir.ListType(ir.INT), False),
        (ERROR, A_ID, True),  # an expression already reported fits everywhere
    ],
)
def test_assignable(value: ir.Type, target: ir.Type, ok: bool) -> None:
    assert assignable(value, target) is ok


def test_comparisons() -> None:
    assert comparable(ir.INT, ir.DECIMAL) and comparable(A_ID, A_ID)
    assert not comparable(A_ID, C_ID) and not comparable(KIND, ir.STRING)
    assert comparable(ir.OptionalType(ir.STRING), ir.STRING)
    assert ordered(ir.INT, ir.DECIMAL) and ordered(ir.DATETIME, ir.DATETIME)
    assert ordered(ir.STRING, ir.STRING) and not ordered(ir.BOOL, ir.BOOL)
    assert not ordered(A_ID, A_ID) and not ordered(ir.DATE, ir.DATETIME)


def test_join_and_show() -> None:
    assert join(ir.INT, ir.DECIMAL) == ir.DECIMAL
    assert join(ir.STRING, ir.OptionalType(ir.STRING)) == ir.OptionalType(ir.STRING)
    assert join(ir.STRING, ir.INT) is None
    assert show(ir.OptionalType(ir.ListType(A_ID))) == "Account id[]?"
