"""The SQLite functions criteria compute decimals with agree with `loom.runtime.decimals` (what
model code computes in memory), and the sort key of `as_number` orders like the numbers."""

from __future__ import annotations

import random
import sqlite3
from decimal import Decimal
from typing import Any

import pytest

from loom.runtime import decimals
from loom.runtime.storage.criteria import SQLITE_FUNCTIONS, install_sqlite_functions

VALUES = ["-100", "-1.5", "-1", "-0.05", "0", "0.0", "0.001", "1", "1.00", "1.5", "10", "1E+2"]


@pytest.fixture
def db() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    install_sqlite_functions(conn)
    return conn


def _one(db: sqlite3.Connection, sql: str, *args: object) -> Any:
    """The first row's one value, of whatever type SQLite answers (decimals come back as text)."""
    return db.execute(sql, args).fetchone()[0]


def test_the_key_sorts_like_the_numbers() -> None:
    (_, key) = SQLITE_FUNCTIONS["loom_dec_key"]
    rng = random.Random(7)
    values = VALUES + [
        str(Decimal(rng.randint(-(10**6), 10**6)).scaleb(rng.randint(-60, 40))) for _ in range(2000)
    ]
    assert sorted(values, key=key) == sorted(values, key=Decimal)
    assert key("1") == key("1.00") == key(1) and key("0") == key("-0.0")
    assert key(None) is None


def test_functions_compute_as_in_memory(db: sqlite3.Connection) -> None:
    for a in VALUES:
        for b in VALUES:
            x, y = Decimal(a), Decimal(b)
            assert _one(db, "SELECT loom_dec_cmp(?, ?)", a, b) == (x > y) - (x < y)
            assert Decimal(_one(db, "SELECT loom_dec_add(?, ?)", a, b)) == decimals.add(x, y)
            assert Decimal(_one(db, "SELECT loom_dec_sub(?, ?)", a, b)) == decimals.sub(x, y)
            assert Decimal(_one(db, "SELECT loom_dec_mul(?, ?)", a, b)) == decimals.mul(x, y)
            if y:
                assert Decimal(_one(db, "SELECT loom_dec_div(?, ?)", a, b)) == decimals.div(x, y)
                assert Decimal(_one(db, "SELECT loom_dec_rem(?, ?)", a, b)) == decimals.rem(x, y)
    # an int column (SQLite INTEGER) mixes with decimal text; NULL stays NULL
    assert _one(db, "SELECT loom_dec_cmp(?, ?)", 2, "1.5") == 1
    assert _one(db, "SELECT loom_dec_add(NULL, ?)", "1") is None
    assert _one(db, "SELECT loom_dec_neg(?)", "-0.5") == "0.5"


def test_int_rem_truncates_and_refuses_zero(db: sqlite3.Connection) -> None:
    for a, b, want in ((-7, 2, -1), (7, -2, 1), (-7, -2, -1), (7, 2, 1), (0, 3, 0)):
        assert decimals.int_rem(a, b) == want
        assert _one(db, "SELECT loom_int_rem(?, ?)", a, b) == want
        assert _one(db, "SELECT ? % ?", a, b) == want  # SQLite's own `%` truncates too
    with pytest.raises(decimals.ArithmeticRefused):
        decimals.int_rem(1, 0)
    with pytest.raises(sqlite3.OperationalError, match="user-defined function raised"):
        _one(db, "SELECT loom_int_rem(1, 0)")
    with pytest.raises(sqlite3.OperationalError, match="user-defined function raised"):
        _one(db, "SELECT loom_dec_div('1', '0')")
