"""Lowering details that back ends rely on (see the docstrings of loom.model.ir)."""

from __future__ import annotations

from decimal import Decimal

from loom.lang import compile_sources, render_text
from loom.model import ir

MODEL = """
context Shop {
  enum Size { Small, Large }
  aggregate Item {
    name: string
    price: decimal
    size: Size = Small
    note: string?
    tags: string[] = []
    derived label: string = name + "!"
    function half(): decimal = price / 2
    public operation reprice(to: decimal) {
      let old = price
      price := to
      emit Repriced { to: to, item: id, from: old }
      emit Repriced { item: id, from: to, to: old }
    }
  }
  repository Items for Item { }
  event Repriced { item: Item id, from: decimal, to: decimal }
  workflow add autocommit {
    create(name: string): Item id {
      let a = Item.create(name, 1)
      let b = Item.create(price: 2.50, name: name)
      let c = Item.create({ size: Large, price: 3, name: name, note: "n" })
      return a.id
    }
  }
  workflow bump transactional {
    create(one: Item id, two: Item id) {
      let x = Items.getById(two)
      let y = Items.getById(one)
      let z = Item.create("z", 0)
      y.reprice(1)
      x.reprice(2)
      y.reprice(3)
    }
  }
}
"""


def model() -> ir.Context:
    result = compile_sources({"shop.loom": MODEL})
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model.contexts[0]


def test_create_spellings_are_normalised_in_field_order() -> None:
    ctx = model()
    body = next(w for w in ctx.workflows if w.name == "add").creates[0].body
    a, b, c = (s for s in body if isinstance(s, ir.CreateAggregate))
    order = ["name", "price", "size", "note", "tags"]
    for s in (a, b, c):
        assert [n for n, _ in s.args] == order
    args = dict(a.args)
    assert args["price"] == ir.Literal_(1, ir.INT, "1")
    assert isinstance(args["size"], ir.EnumMember) and args["size"].member == "Small"  # default
    assert args["note"] is None  # optional, no default
    price = dict(b.args)["price"]
    assert price == ir.Literal_("2.50", ir.DECIMAL, "2.50") and isinstance(price.value, str)
    assert Decimal(price.value) == Decimal("2.50")
    size, note = dict(c.args)["size"], dict(c.args)["note"]
    assert isinstance(size, ir.EnumMember) and size.text == "Large"
    assert isinstance(note, ir.Literal_) and note.value == "n"
    saves = [s for s in body if isinstance(s, ir.Save)]
    assert [s.name for s in saves] == ["a", "b", "c"] and all(s.fresh for s in saves)


def test_saves_follow_binding_order_and_skip_untouched_loads() -> None:
    ctx = model()
    body = next(w for w in ctx.workflows if w.name == "bump").creates[0].body
    saves = [s for s in body if isinstance(s, ir.Save)]
    assert saves == [
        ir.Save("x", "Items", "Item", fresh=False),
        ir.Save("y", "Items", "Item", fresh=False),
        ir.Save("z", "Items", "Item", fresh=True),
    ]
    assert body[-3:] == tuple(saves)


def test_emit_args_follow_the_event_field_order() -> None:
    ctx = model()
    op = ctx.aggregate("Item").operations[0]
    emits = [s for s in op.body if isinstance(s, ir.Emit)]
    for e in emits:
        assert [n for n, _ in e.args] == ["item", "from", "to"]
    assert [a.text for _, a in emits[0].args] == ["id", "old", "to"]
    assert op.emits == ("Repriced",)
    let = op.body[0]
    assert isinstance(let, ir.Let) and let.value == ir.SelfField("price", ir.DECIMAL, "price")


def test_expression_types() -> None:
    ctx = model()
    item = ctx.aggregate("Item")
    assert item.derived[0].value.type == ir.STRING
    half = item.functions[0].value
    assert isinstance(half, ir.Binary) and half.op == "/" and half.type == ir.DECIMAL
    assert item.fields[4].default == ir.ListLiteral((), ir.ListType(ir.STRING), "[]")
    assert item.fields[3].type == ir.OptionalType(ir.STRING)
