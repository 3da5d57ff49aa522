"""`format_source`: the canonical layout, construct by construct, with the comments and blank lines
kept where they were; what does not parse comes back as its diagnostics."""

from __future__ import annotations

import pytest

from loom.lang.format import Formatted, format_source

# every declaration, member and statement, written with no care for layout
MESSY = """\
// head comment


context   Shop   tenanted{
  enum Status{Open,Paid terminal , Closed renamed   from Shut}
    event Placed{order:Order id,total:decimal(10,2)}
  value Money{amount:decimal currency:string invariant amount>=0 message "no debt"}
  command Place{sku:string}
  aggregate Order with crudish,audited{
    sku :string(100) immutable
    note:string?
    tags:string[]=[]
    status:Status readOnly=Open
    derived big:bool=total>100&&!closed
    unique(sku)
    function twice(n:int):int=n*2
    create(sku:string)requires currentUser.isAuthenticated{ precondition sku!="" message "sku"
      self.sku:=sku }
    private operation close()when status==Open{status:=Closed}
    internal extern operation ping(x:int):int
    operation pay(amount:decimal)requires(amount>0)when status==Open{
      var left:decimal=-amount
      left+=1  let m=Money{amount:amount,currency:"EUR"}
      if left>0{emit Placed{order:id,total:left}}
      else if let x=Orders.findBySku(sku)ignoring A,B{return x}
      else{notFound "x"}
      for t in tags{t.size()}
      let y=left>0?1:-1
    }
  }
  repository Orders for Order{find bySku(sku:string):Order? filter Open}
  criterion Open of Order=status==Open
  retrieval Recent(n:int)of Order{where:total>n}
  channel Out{carries:Placed source:Bus backoff:1s..5m}
  workflow place transactional(serializable){
    order:Order id
    create(c:Place):Order id{let o=Order.create({sku:c.sku})
      schedule nudge after 1h
      return o.id}
    on(e:Placed)by e.order{cancel nudge complete}
    on timeout nudge{complete}
  }
  commandHandler run(x:int):int requires true autocommit{return x}
  queryHandler q():int{return 1}
  domainService Calc{add(a:int,b:int):int=a+b}
  projection Totals{key:Order id on(e:Placed)by e.order{key:=e.order} filter currentUser.isSystem}
  timer sweep every 1h{cancel()}
}
deployable Shop{contexts:Shop}
channelSource Bus{kind:nats}
"""
TIDY = """\
// head comment

context Shop tenanted {
  enum Status { Open, Paid terminal, Closed renamed from Shut }
  event Placed { order: Order id, total: decimal(10, 2) }
  value Money { amount: decimal currency: string invariant amount >= 0 message "no debt" }
  command Place { sku: string }
  aggregate Order with crudish, audited {
    sku: string(100) immutable
    note: string?
    tags: string[] = []
    status: Status readOnly = Open
    derived big: bool = total > 100 && !closed
    unique(sku)
    function twice(n: int): int = n * 2
    create(sku: string) requires currentUser.isAuthenticated {
      precondition sku != "" message "sku"
      self.sku := sku
    }
    private operation close() when status == Open { status := Closed }
    internal extern operation ping(x: int): int
    operation pay(amount: decimal) requires (amount > 0) when status == Open {
      var left: decimal = -amount
      left += 1
      let m = Money { amount: amount, currency: "EUR" }
      if left > 0 {
        emit Placed { order: id, total: left }
      } else if let x = Orders.findBySku(sku) ignoring A, B {
        return x
      } else {
        notFound "x"
      }
      for t in tags { t.size() }
      let y = left > 0 ? 1 : -1
    }
  }
  repository Orders for Order {
    find bySku(sku: string): Order?
      filter Open
  }
  criterion Open of Order = status == Open
  retrieval Recent(n: int) of Order { where: total > n }
  channel Out {
    carries: Placed
    source: Bus
    backoff: 1s .. 5m
  }
  workflow place transactional(serializable) {
    order: Order id
    create(c: Place): Order id {
      let o = Order.create({ sku: c.sku })
      schedule nudge after 1h
      return o.id
    }
    on(e: Placed) by e.order {
      cancel nudge
      complete
    }
    on timeout nudge { complete }
  }
  commandHandler run(x: int): int requires true autocommit { return x }
  queryHandler q(): int { return 1 }
  domainService Calc { add(a: int, b: int): int = a + b }
  projection Totals {
    key: Order id
    on(e: Placed) by e.order { key := e.order }
    filter currentUser.isSystem
  }
  timer sweep every 1h { cancel() }
}
deployable Shop { contexts: Shop }
channelSource Bus { kind: nats }
"""


def fmt(text: str) -> str:
    result = format_source(text)
    assert result.text is not None, result.diagnostics
    assert format_source(result.text).text == result.text  # idempotent
    return result.text


def test_every_construct_in_the_canonical_layout() -> None:
    assert fmt(MESSY) == TIDY


CASES = {
    "spaces around operators, none inside brackets, no alignment": (
        "context A { aggregate B {\n  n   :  int=( 1+2 )*-3\n  xs:string [ ]\n} }",
        "context A {\n  aggregate B {\n    n: int = (1 + 2) * -3\n    xs: string[]\n  }\n}\n",
    ),
    "a conditional's ? and : are spaced, an optional type's ? is not": (
        'context A { aggregate B { s: string?  n: int = s == ""?1:2 } }',
        'context A {\n  aggregate B {\n    s: string?\n    n: int = s == "" ? 1 : 2\n  }\n}\n',
    ),
    "trailing, own-line, block and end-of-file comments stay where they are": (
        "context A {   // trailing\n\n\n  // own line\n  aggregate B {\n    x: int    // after\n"
        "    /* lead */ y: int\n    z: int /* in */ = 2\n  }\n  /* a\n     b */\n}\n// end\n\n",
        "context A { // trailing\n  // own line\n  aggregate B {\n    x: int // after\n"
        "    /* lead */ y: int\n    z: int /* in */ = 2\n  }\n  /* a\n     b */\n}\n// end\n",
    ),
    "blank lines: one at most, none at the start or end of a file or a block": (
        "\n\ncontext A {\n\n  event E { n: int }\n\n\n\n  event F { n: int }\n\n}\n\n\n",
        "context A {\n  event E { n: int }\n\n  event F { n: int }\n}\n",
    ),
    "one declaration, member or statement per line": (
        "context A { aggregate B { x: int  y: int  operation f() { x := 1  y := 2 } } }",
        "context A {\n  aggregate B {\n    x: int\n    y: int\n    operation f() {\n"
        "      x := 1\n      y := 2\n    }\n  }\n}\n",
    ),
    "braces holding one member may stay on one line; an empty pair is `{ }`": (
        "context A { aggregate B { x: int }\n  repository Bs for B {}\n}",
        "context A {\n  aggregate B { x: int }\n  repository Bs for B { }\n}\n",
    ),
    "a pair broken over lines: contents one step in, the closer on its own line": (
        "context A { aggregate B { operation f() { let x = g(1,\n 2) } } }",
        "context A {\n  aggregate B {\n    operation f() {\n      let x = g(\n        1,\n"
        "        2\n      )\n    }\n  }\n}\n",
    ),
    "a call's only argument, a record broken over lines, hugs the parentheses": (
        "context A { aggregate B { operation f() {\n let x = B.create({ a: 1,\n b: 2 }) } } }",
        "context A {\n  aggregate B {\n    operation f() {\n      let x = B.create({\n"
        "        a: 1,\n        b: 2\n      })\n    }\n  }\n}\n",
    ),
    "a line that continues an expression is one step deeper; `{` and `else` join": (
        "context A { aggregate B { n: int\noperation f()\nwhen n > 0 &&\nn < 9\n{\n"
        "if n > 1 { n := 1 }\nelse { n := 2 } } } }",
        "context A {\n  aggregate B {\n    n: int\n    operation f()\n      when n > 0 &&\n"
        "      n < 9 {\n      if n > 1 {\n        n := 1\n      } else {\n        n := 2\n"
        "      }\n    }\n  }\n}\n",
    ),
    "an if on one line stays on one line": (
        "context A { aggregate B { n: int\n operation f() { if n > 1 { n := 1 } else { n := 2 } } } }",
        "context A {\n  aggregate B {\n    n: int\n    operation f() { if n > 1 { n := 1 } else "
        "{ n := 2 } }\n  }\n}\n",
    ),
    "an if on one line with a block that must break: every block of its chain breaks": (
        "context A { aggregate B { n: int\n operation f() {\n"
        "if n > 1 { n := 1 } else { n := 2  n := 3 }\n"
        "if n > 1 { n := 1 } else if n > 2 { n := 2  n := 3 } else { n := 4 } } } }",
        "context A {\n  aggregate B {\n    n: int\n    operation f() {\n"
        "      if n > 1 {\n        n := 1\n      } else {\n        n := 2\n        n := 3\n"
        "      }\n      if n > 1 {\n        n := 1\n      } else if n > 2 {\n        n := 2\n"
        "        n := 3\n      } else {\n        n := 4\n      }\n    }\n  }\n}\n",
    ),
    "tabs, carriage returns and `renamed   from` are normalised": (
        "context A {\r\n\tevent E renamed   from D { n: int }\r\n}\r\n",
        "context A {\n  event E renamed from D { n: int }\n}\n",
    ),
    "an empty file stays empty; a file of comments keeps them": ("", ""),
    "comments only": ("  // a\n\n\n/* b */  ", "// a\n\n/* b */\n"),
}


@pytest.mark.parametrize("case", CASES)
def test_layout(case: str) -> None:
    source, expected = CASES[case]
    assert fmt(source) == expected
    assert fmt(expected) == expected  # formatting twice changes nothing


def test_a_text_that_does_not_parse_is_its_diagnostics() -> None:
    result = format_source("context A {\n  aggregate B { x: }\n}\n", "m.loom")
    assert result.text is None
    (diagnostic,) = result.diagnostics
    assert (diagnostic.code, diagnostic.span.file, diagnostic.span.line) == (
        "loom.syntax-error",
        "m.loom",
        2,
    )


def test_a_checker_error_is_no_reason_not_to_format() -> None:
    assert format_source("context A { aggregate B { x: Nowhere } }") == Formatted(
        "context A { aggregate B { x: Nowhere } }\n"
    )
