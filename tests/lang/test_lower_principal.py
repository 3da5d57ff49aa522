"""`requires` gates and `currentUser` (issue 4 §3): parsing, typing and lowering to the IR."""

from __future__ import annotations

from loom.lang import compile_sources, render_text
from loom.model import ir

MODEL = """
context Desk {
  aggregate Ticket {
    owner: string = ""
    open: bool = true
    operation close(by: string) requires currentUser.isSystem || currentUser.hasRole("lead")
                                when open {
      open := false
    }
    operation take(who: string) requires who == currentUser.id { owner := who }
    extern operation notify(c: string) requires currentUser.claim("team") == c
    private operation touch() requires currentUser.isAuthenticated { }
  }
  repository Tickets for Ticket { }
  commandHandler Take(ticket: Ticket id) {
    let t = Tickets.getById(ticket)
    let roles = currentUser.roles
    t.take(currentUser.id)
  }
  commandHandler Named(currentUser: string) {
    precondition currentUser != ""
  }
}
"""


def model() -> ir.Context:
    result = compile_sources({"desk.loom": MODEL})
    assert result.ok, render_text(result.diagnostics, result.sources)
    # `notify`'s gate admits a caller without a token whose `c` is "" (its claim is absent);
    # `roles` is never read.
    assert [d.code for d in result.diagnostics] == [
        "loom.gate-admits-anonymous",
        "loom.unused-local",
    ]
    assert result.model is not None
    return result.model.contexts[0]


def op(name: str) -> ir.Operation:
    return next(o for o in model().aggregate("Ticket").operations if o.name == name)


def test_gate_and_state_gate() -> None:
    close = op("close")
    gate = close.requires
    assert isinstance(gate, ir.Binary) and gate.op == "||" and gate.type == ir.BOOL
    assert gate.left == ir.CurrentUser("isSystem", (), ir.BOOL, "currentUser.isSystem")
    right = gate.right
    assert isinstance(right, ir.CurrentUser) and right.member == "hasRole"
    assert right.args == (ir.Literal_("lead", ir.STRING, '"lead"'),)
    assert close.when is not None and close.when.text == "open"


def test_gate_reads_parameters_and_every_operation_kind_takes_one() -> None:
    take = op("take").requires
    assert isinstance(take, ir.Binary) and take.left == ir.Param("who", ir.STRING, "who")
    assert take.right == ir.CurrentUser("id", (), ir.STRING, "currentUser.id")
    notify = op("notify")
    assert notify.extern and isinstance(notify.requires, ir.Binary)
    assert isinstance(notify.requires.left, ir.CurrentUser)
    assert notify.requires.left.member == "claim"
    touch = op("touch")
    assert touch.private and isinstance(touch.requires, ir.CurrentUser)


def test_current_user_in_a_handler_body() -> None:
    h = next(h for h in model().handlers if h.name == "Take")
    let = next(s for s in h.body if isinstance(s, ir.Let))
    assert let.value == ir.CurrentUser("roles", (), ir.ListType(ir.STRING), "currentUser.roles")
    call = next(s for s in h.body if isinstance(s, ir.CallOperation))
    assert call.args == (ir.CurrentUser("id", (), ir.STRING, "currentUser.id"),)
    # a parameter named `currentUser` hides the principal
    named = next(h for h in model().handlers if h.name == "Named")
    pre = named.body[0]
    assert isinstance(pre, ir.Precondition) and isinstance(pre.condition, ir.Binary)
    assert pre.condition.left == ir.Param("currentUser", ir.STRING, "currentUser")
