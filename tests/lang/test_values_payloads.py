"""Value objects, payloads and record expressions in the front end: the grammar stays free of new
LALR conflicts, a record is a whole value only, and lowering normalises record expressions."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
from lark import Lark
from lark import logger as lark_logger

from loom.lang import compile_sources
from loom.model import ir

GRAMMAR = Path(__file__).resolve().parents[2] / "src/loom/lang/syntax/grammar.lark"

# Shift/reduce conflicts the grammar had before records, all resolved as shifts and all from
# statements following each other without a separator (`x` then `-y` / `(y)`, `notFound` then a
# string). A record's `{` must add none.
KNOWN_CONFLICTS = {
    ("MINUS", "<cmp : sum>"),
    ("MINUS", "<cmp : sum cmp_op sum>"),
    ("LPAR", "<unary : postfix>"),
    ("STRING", "<not_found : NOTFOUND>"),
    # `complete (…)`: a call of a sibling operation named `complete` (shift), never `complete` and
    # then a parenthesised statement, which could not run after it anyway
    ("LPAR", "<complete : COMPLETE>"),
}


def _conflicts() -> set[tuple[str, str]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    level = lark_logger.level
    lark_logger.addHandler(handler)
    lark_logger.setLevel(logging.DEBUG)
    try:
        Lark(
            GRAMMAR.read_text(encoding="utf-8"),
            parser="lalr",
            lexer="contextual",
            propagate_positions=True,
            maybe_placeholders=False,
            debug=True,
        )
    finally:
        lark_logger.removeHandler(handler)
        lark_logger.setLevel(level)
    found: set[tuple[str, str]] = set()
    lines = stream.getvalue().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Shift/Reduce conflict for terminal") or "Reduce/Reduce" in line:
            terminal = line.split("terminal ")[1].split(":")[0] if "terminal" in line else line
            found.add((terminal, lines[i + 1].strip(" *")))
    return found


def test_records_add_no_lalr_conflict() -> None:
    conflicts = _conflicts()
    assert conflicts == KNOWN_CONFLICTS
    assert not [c for c in conflicts if c[0] in ("LBRACE", "RBRACE")]


def _codes(body: str) -> list[str]:
    return [d.code for d in compile_sources({"m.loom": body}).diagnostics]


MONEY = 'value Money { amount: int, currency: string = "EUR" }'


@pytest.mark.parametrize(
    "stmt",
    [
        "if let m = Money { amount: 1 } { }",
        "for m in Money { amount: 1 } { }",
        "precondition Money { amount: 1 } == Money { amount: 1 }",
        "let x = Money { amount: 1 }.amount",
    ],
)
def test_a_record_is_a_whole_value_only(stmt: str) -> None:
    body = f"context C {{ {MONEY} workflow w {{ create(n: int) {{ {stmt} }} }} }}"
    assert _codes(body) == ["loom.syntax-error"]


def test_a_when_gate_is_not_a_record() -> None:
    body = (
        f"context C {{ {MONEY} aggregate A {{ ok: bool = true "
        "operation f() when ok { ok := false } } }"
    )
    assert _codes(body) == []


def test_record_positions_compile() -> None:
    body = f"""context C {{
      {MONEY}
      value Pair {{ left: Money, right: Money = Money {{ amount: 0 }} }}
      aggregate A {{
        m: Money = Money {{ amount: 1 }}
        ms: Money[] = [Money {{ amount: 1 }}, Money {{ amount: 2, currency: "USD" }}]
        derived twice: Money = Money {{ amount: m.amount * 2, currency: m.currency }}
        function half(): Money = Money {{ amount: m.amount / 2 > 0 ? 1 : 0 }}
        public operation set(x: int) {{
          let p = Pair {{ left: Money {{ amount: x }} }}
          m := p.left
          emit Changed {{ to: Money {{ amount: x }} }}
        }}
      }}
      event Changed {{ to: Money }}
      repository As for A {{ }}
      workflow w {{
        create(x: int) {{
          let a = A.create(m: Money {{ amount: x }})
          a.set(x)
        }}
      }}
    }}"""
    assert _codes(body) == []


def test_lowering_fills_defaults_in_declaration_order() -> None:
    body = f"""context C {{
      {MONEY}
      value Tagged {{ note: string?, money: Money }}
      aggregate A {{ t: Tagged = Tagged {{ money: Money {{ amount: 3 }} }} }}
    }}"""
    result = compile_sources({"m.loom": body})
    assert result.model is not None, [d.message for d in result.diagnostics]
    ctx = result.model.contexts[0]
    default = ctx.aggregates[0].fields[0].default
    assert isinstance(default, ir.Construct)
    assert default.type == ir.ValueType("Tagged", "C")
    assert (default.args[0].name, default.args[0].value) == ("note", None)
    money = default.args[1].value
    assert isinstance(money, ir.Construct)
    assert [a.name for a in money.args] == ["amount", "currency"]
    currency = money.args[1].value
    assert isinstance(currency, ir.Literal_) and currency.value == "EUR"
    assert ctx.values[1].fields[0].type == ir.OptionalType(ir.STRING)


def test_a_payload_shares_its_name_with_its_workflow_and_handler() -> None:
    body = """context C {
      command Close { reason: string }
      query Close2 { n: int }
      workflow Close { create(c: Close) { precondition c.reason != "" } }
      commandHandler Close2(q: Close) { precondition q.reason != "" }
    }"""
    # `Close2` the query payload and `Close2` the handler; `Close` the command and the workflow
    assert _codes(body) == []
    again = body.replace("query Close2", "command Close")
    assert "loom.duplicate-declaration" in _codes(again)


def test_payload_kinds_and_member_types() -> None:
    body = """context C {
      command Go { n: int }
      query Look { n: int }
      response Seen { n: int }
      error Oops { why: string }
      commandHandler Run(g: Go): Seen { return Seen { n: g.n } }
      queryHandler See(l: Look): Oops[] { return l.n > 0 ? [] : [Oops { why: "zero" }] }
    }"""
    result = compile_sources({"m.loom": body})
    assert result.model is not None, [d.message for d in result.diagnostics]
    ctx = result.model.contexts[0]
    assert [(p.kind, p.name) for p in ctx.payloads] == [
        ("command", "Go"),
        ("query", "Look"),
        ("response", "Seen"),
        ("error", "Oops"),
    ]
    see = ctx.handlers[1]
    assert see.result == ir.ListType(ir.PayloadType("Oops", "C", "error"))
    assert see.params[0].type == ir.PayloadType("Look", "C", "query")


@pytest.mark.parametrize(
    "stmt",
    [
        "if let m = Money { amount: n } { }",
        "precondition Money { amount: n } == Money { amount: 1 }",
    ],
)
def test_a_misplaced_record_says_to_bind_it_first(stmt: str) -> None:
    body = f"context C {{ {MONEY} workflow w {{ create(n: int) {{ {stmt} }} }} }}"
    (d,) = compile_sources({"m.loom": body}).diagnostics
    assert d.code == "loom.syntax-error"
    assert d.help is not None and "bind it first with `let`" in d.help
