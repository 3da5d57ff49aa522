"""Criteria and finds answer exactly what the same condition answers in memory, on SQLite and
PostgreSQL: decimal arithmetic and comparison are exact (never text concatenation, never a float),
a plain decimal `unique` key holds one row per number, `%` of ints truncates everywhere, and fields
and parameters named like Python keywords work in criteria and finds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loom.testing import ServiceClient, serve

MODEL = """
context Ex {
  aggregate Row with crudish {
    d: decimal
    p: decimal(8, 3) = 0
    n: int = 0
    derived nm: int = n % 3
    derived nd: decimal = n / 2
  }
  aggregate Uq with crudish {
    d: decimal
    unique (d)
  }
  repository Rows for Row { }
  repository Uqs for Uq { find byD(d: decimal): Uq? }

  criterion Sum(x: decimal) of Row = d + p > x
  criterion Same(x: decimal) of Row = d == x
  criterion Below(x: decimal) of Row = d - p * 2 < x
  criterion Negated(x: decimal) of Row = -d >= x
  criterion Rem(m: int, r: int) of Row = n % m == r
  criterion Half(x: decimal) of Row = n / 2 == x
  criterion Third(x: decimal) of Row = d / 3 == x
  criterion DRem(m: decimal, r: decimal) of Row = d % m == r
  criterion PerN(x: decimal) of Row = d / n > x

  queryHandler sum(x: decimal): Row[] { let rs = Rows.findAll(Sum(x))  return rs }
  queryHandler same(x: decimal): Row[] { let rs = Rows.findAll(Same(x))  return rs }
  queryHandler below(x: decimal): Row[] { let rs = Rows.findAll(Below(x))  return rs }
  queryHandler negated(x: decimal): Row[] { let rs = Rows.findAll(Negated(x))  return rs }
  queryHandler rem(m: int, r: int): Row[] { let rs = Rows.findAll(Rem(m, r))  return rs }
  queryHandler half(x: decimal): Row[] { let rs = Rows.findAll(Half(x))  return rs }
  queryHandler third(x: decimal): Row[] { let rs = Rows.findAll(Third(x))  return rs }
  queryHandler dRem(m: decimal, r: decimal): Row[] { let rs = Rows.findAll(DRem(m, r))  return rs }
  queryHandler perN(x: decimal): Row[] { let rs = Rows.findAll(PerN(x))  return rs }
  queryHandler intRem(a: int, b: int): int { return a % b }
  queryHandler decRem(a: decimal, b: decimal): decimal { return a % b }
  queryHandler intDiv(a: int, b: int): decimal { return a / b }
}
"""


async def _model(tmp_path: Path, text: str) -> Path:
    model = tmp_path / "ex.loom"
    model.write_text(text)
    return model


async def _row(c: ServiceClient, **fields: Any) -> dict[str, Any]:
    r = await c.post("/api/rows", json=fields)
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _query(c: ServiceClient, name: str, **params: Any) -> list[str]:
    r = await c.get(f"/api/queries/{name}", params=params)
    assert r.status_code == 200, r.text
    return sorted(row["d"] for row in r.json())


async def test_decimal_arithmetic_in_criteria_is_exact(database_url: str, tmp_path: Path) -> None:
    async with serve([await _model(tmp_path, MODEL)], database_url) as c:
        await _row(c, d="1.0", p="2.5")
        await _row(c, d="0", p="0")
        # `+` adds (it once joined the texts, and every row came back)
        assert await _query(c, "sum", x="3.4") == ["1.0"]
        assert await _query(c, "sum", x="3.5") == []
        assert await _query(c, "below", x="-3.9") == ["1.0"]  # 1 - 5 = -4
        assert await _query(c, "below", x="-4") == []
        assert await _query(c, "negated", x="-1") == ["0", "1.0"]
        assert await _query(c, "negated", x="-0.9") == ["0"]

        # beyond a float's 17 digits: compared as numbers, not as REALs
        await _row(c, d="12345678901234567890")
        assert await _query(c, "same", x="12345678901234567891") == []
        assert await _query(c, "same", x="12345678901234567890.00") == ["12345678901234567890"]
        assert await _query(c, "same", x="1.000") == ["1.0"]

        # `/` rounds half-even at the 50th place, as in memory
        await _row(c, d="2")
        third = "0." + "6" * 49 + "7"
        assert await _query(c, "third", x=third) == ["2"]
        assert await _query(c, "third", x="0." + "6" * 50) == []

        # decimal `%`: the remainder of truncating division, the dividend's sign
        await _row(c, d="-7.5")
        assert await _query(c, "d_rem", m="2", r="-1.5") == ["-7.5"]
        assert await _query(c, "d_rem", m="2", r="0.5") == []


async def test_int_rem_and_div_agree_in_memory_and_in_sql(
    database_url: str, tmp_path: Path
) -> None:
    async with serve([await _model(tmp_path, MODEL)], database_url) as c:
        rows = {n: await _row(c, d=str(n), n=n) for n in (-7, -3, 5, 7)}
        # derived values (memory) and criteria (SQL) agree for negative operands
        for n, row in rows.items():
            remainder = -(abs(n) % 3) if n < 0 else n % 3
            assert row["nm"] == remainder
            fetched = (await c.get(f"/api/rows/{row['id']}")).json()
            assert fetched["nm"] == remainder
            assert await _query(c, "rem", m=3, r=remainder) == sorted(
                str(k) for k in rows if (-(abs(k) % 3) if k < 0 else k % 3) == remainder
            )
        assert rows[-7]["nd"] == "-3.5"
        assert await _query(c, "half", x="-3.5") == ["-7"]
        assert await _query(c, "half", x="-4") == []
        assert await _query(c, "rem", m=2, r=-1) == ["-3", "-7"]
        assert await _query(c, "rem", m=-2, r=1) == ["5", "7"]

        # a query handler answers the same
        for a, b, want in ((-7, 2, -1), (7, -2, 1), (-7, -2, -1), (7, 2, 1)):
            r = await c.get("/api/queries/int_rem", params={"a": a, "b": b})
            assert r.json() == want, (a, b)
        r = await c.get("/api/queries/dec_rem", params={"a": "-7", "b": "2"})
        assert r.json() == "-1"
        r = await c.get("/api/queries/int_div", params={"a": -7, "b": 2})
        assert r.json() == "-3.5"

        # division by zero is refused with a 422, in memory and in SQL alike
        for name, params in (
            ("int_rem", {"a": 1, "b": 0}),
            ("int_div", {"a": 1, "b": 0}),
            ("rem", {"m": 0, "r": 0}),
            ("d_rem", {"m": "0", "r": "0"}),
        ):
            r = await c.get(f"/api/queries/{name}", params=params)
            assert r.status_code == 422, (name, r.text)
            assert r.headers["content-type"] == "application/problem+json"
        await _row(c, d="1", n=0)  # d / n with n = 0 on this row only
        r = await c.get("/api/queries/per_n", params={"x": "0"})
        assert r.status_code == 422, r.text


async def test_unique_plain_decimal_is_one_row_per_number(
    database_url: str, tmp_path: Path
) -> None:
    async with serve([await _model(tmp_path, MODEL)], database_url) as c:
        r = await c.post("/api/uqs", json={"d": "1"})
        assert r.status_code == 201, r.text
        for same in ("1.0", "1.00", 1):
            r = await c.post("/api/uqs", json={"d": same})
            assert r.status_code == 409, (same, r.text)
            assert r.json()["type"] == "urn:loom:problem:duplicate-key"
        r = await c.post("/api/uqs", json={"d": "0"})
        assert r.status_code == 201, r.text
        r = await c.post("/api/uqs", json={"d": "0.0"})
        assert r.status_code == 409, r.text
        r = await c.post("/api/uqs", json={"d": "2.50"})
        assert r.status_code == 201, r.text
        id_ = r.json()["id"]
        # a key is stored as its number, read back alike on both engines
        assert (await c.get(f"/api/uqs/{id_}")).json()["d"] == "2.5"
        for asked in ("2.5", "2.500"):
            r = await c.get("/api/uqs/find/by_d", params={"d": asked})
            assert r.status_code == 200 and r.json()["id"] == id_, r.text


KEYWORDS = """
context Kw {
  aggregate Item with crudish {
    class: string = ""
    from: int = 0
    def: decimal = 0
    lambda: bool = false
    none: string = ""
    True: int = 0
    self: int = 0
    c: int = 0
    unique (class)
    unique (True)
  }
  repository Items for Item {
    find byClass(class: string): Item?
    find byFrom(from: int): Item[]
    find byDef(def: decimal): Item[]
  }
  criterion Cls(global: string) of Item = class == global
  criterion Over(import: decimal) of Item = def > import && lambda && from % 2 == 1
  criterion Empty of Item = none == "" && c == 0
  criterion Mine(cls: int, c: int) of Item = self == cls && True < c
  queryHandler cls(global: string): Item[] { let xs = Items.findAll(Cls(global))  return xs }
  queryHandler over(import: decimal): Item[] { let xs = Items.findAll(Over(import))  return xs }
  queryHandler empty(): Item[] { let xs = Items.findAll(Empty)  return xs }
  queryHandler mine(cls: int, c: int): Item[] { let xs = Items.findAll(Mine(cls, c))  return xs }
  queryHandler byTrue(n: int): string { let i = Items.getBy(True: n)  return i.class }
}
"""


async def test_keyword_names_in_criteria_and_finds(database_url: str, tmp_path: Path) -> None:
    async with serve([await _model(tmp_path, KEYWORDS)], database_url) as c:
        rows = (("a", 1, "2.5", True), ("b", 3, "1", True), ("c", 1, "9", False))
        for n, (cls, frm, dfn, lam) in enumerate(rows):
            body = {"class": cls, "from": frm, "def": dfn, "lambda": lam, "True": n, "self": n}
            r = await c.post("/api/items", json=body)
            assert r.status_code == 201, r.text
        r = await c.get("/api/items/find/by_class", params={"class": "b"})
        assert r.status_code == 200 and r.json()["from"] == 3, r.text
        r = await c.get("/api/items/find/by_from", params={"from": 1})
        assert sorted(i["class"] for i in r.json()) == ["a", "c"]
        r = await c.get("/api/items/find/by_def", params={"def": "2.50"})
        assert [i["class"] for i in r.json()] == ["a"]
        r = await c.get("/api/queries/cls", params={"global": "c"})
        assert [i["class"] for i in r.json()] == ["c"]
        r = await c.get("/api/queries/over", params={"import": "2"})
        assert [i["class"] for i in r.json()] == ["a"]
        r = await c.get("/api/queries/empty")
        assert len(r.json()) == 3
        r = await c.get("/api/queries/mine", params={"cls": 1, "c": 2})
        assert [i["class"] for i in r.json()] == ["b"], r.text
        r = await c.get("/api/queries/by_true", params={"n": 2})
        assert r.json() == "c", r.text
