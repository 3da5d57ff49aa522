"""Lowering of the workflow language (issue 3): reads, branches, loops, deletes, handlers, services,
workflow state and correlation. The model is data/ok/support_workflows.loom."""

from __future__ import annotations

from pathlib import Path

from loom.lang import compile_files, compile_sources, render_text
from loom.model import ir

OK = Path(__file__).parent / "data" / "ok" / "support_workflows.loom"


def ctx() -> ir.Context:
    result = compile_files([str(OK)])
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model.contexts[0]


def create_body(c: ir.Context, name: str) -> tuple[ir.Stmt, ...]:
    return next(w for w in c.workflows if w.name == name).creates[0].body


def handler(c: ir.Context, name: str) -> ir.Handler:
    return next(h for h in c.handlers if h.name == name)


def saves(stmts: tuple[ir.Stmt, ...]) -> list[str]:
    return [s.name for s in stmts if isinstance(s, ir.Save)]


def test_loop_body_saves_its_element_and_its_creations() -> None:
    body = create_body(ctx(), "sweep")
    load = body[0]
    assert isinstance(load, ir.Load) and load.name == "due"
    assert (load.read.kind, load.read.cardinality, load.read.target) == ("retrieval", "many", "Due")
    assert [n for n, _ in load.read.args] == ["asOf"]
    loop = body[1]
    assert isinstance(loop, ir.ForEach) and loop.name == "t" and loop.items.text == "due"
    assert isinstance(loop.body[0], ir.CallOperation)
    assert loop.body[-2:] == (
        ir.Save("t", "Tickets", "Ticket", fresh=False),
        ir.Save("n", "Tickets", "Ticket", fresh=True),
    )
    untouched = body[3]
    assert isinstance(untouched, ir.ForEach) and saves(untouched.body) == []  # only a function read
    assert saves(body) == []  # nothing at the top level to save
    assert isinstance(body[-1], ir.Return)


def test_branch_saves_at_the_end_of_each_branch_and_outer_saves_before_return() -> None:
    body = create_body(ctx(), "openTicket")
    branch = next(s for s in body if isinstance(s, ir.IfLet))
    assert branch.read is not None and branch.read.kind == "by_key"
    assert branch.read.cardinality == "optional" and branch.read.key == ("customer", "dueAt")
    assert saves(branch.then) == ["old", "w"] and saves(branch.otherwise) == ["x"]
    assert isinstance(branch.then[-1], ir.Save) and isinstance(branch.otherwise[-1], ir.Save)
    *_, s1, s2, s3, ret = body
    assert [s1, s2, s3] == [ir.Save(n, "Tickets", "Ticket", fresh=True) for n in "tuv"]
    assert isinstance(ret, ir.Return)


def test_deleted_aggregates_are_never_saved_and_notfound_names_the_aggregate() -> None:
    c = ctx()
    purge = handler(c, "Purge").body
    (branch,) = purge
    assert isinstance(branch, ir.IfLet) and branch.read is not None
    assert (branch.read.kind, branch.read.cardinality) == ("by_id", "optional")
    (gone,) = branch.then
    assert isinstance(gone, ir.Delete)
    assert gone == ir.Delete("t", "Tickets", "Ticket", gone.origin)
    (miss,) = branch.otherwise
    assert isinstance(miss, ir.NotFoundStmt) and miss.aggregate == "Ticket" and miss.detail is None
    remove = handler(c, "Remove").body
    assert isinstance(remove[-1], ir.Delete) and saves(remove) == []
    escalate = handler(c, "EscalateOpen").body[0]
    assert isinstance(escalate, ir.IfLet)
    missing = escalate.otherwise[0]
    assert isinstance(missing, ir.NotFoundStmt)
    assert missing == ir.NotFoundStmt("no open ticket", None, missing.origin)


def test_correlated_workflow_binds_first_and_saves_instance_last() -> None:
    c = ctx()
    wf = next(w for w in c.workflows if w.name == "FulfillOrder")
    assert wf.correlation == "ticket" and [f.name for f in wf.state] == [
        "ticket",
        "attempts",
        "note",
    ]
    body = wf.creates[0].body
    assert isinstance(body[0], ir.BindInstance) and body[0].key == ir.Param(
        "ticket", ir.IdType("Ticket", "Support"), "ticket"
    )
    assert body[-2:] == (ir.Save("t", "Tickets", "Ticket", fresh=False), ir.SaveInstance())
    assign = next(s for s in body if isinstance(s, ir.AssignState))
    call = assign.value
    assert isinstance(call, ir.Binary) and isinstance(call.left, ir.FunctionCall)
    assert call.left.owner == "workflow" and call.left.workflow == "FulfillOrder"
    assert isinstance(call.right, ir.FunctionCall)
    assert call.right.args[0] == ir.StateField("attempts", ir.INT, "attempts")
    branch = next(s for s in body if isinstance(s, ir.IfLet))
    assert branch.read is None and branch.value is not None and branch.value.text == "note"
    fns = {f.name: f for f in wf.functions}
    assert fns["slaDays"].value is not None and fns["slaDays"].body == ()
    assert fns["twice"].value is None and isinstance(fns["twice"].body[-1], ir.Return)
    adopt = create_body(c, "Adopt")
    assert isinstance(adopt[0], ir.Load)
    assert isinstance(adopt[1], ir.BindInstance) and adopt[1].key.text == "t.id"
    assert isinstance(adopt[-1], ir.SaveInstance)


def test_event_sourced_workflow_and_apply() -> None:
    wf = next(w for w in ctx().workflows if w.name == "Ledger")
    assert wf.event_sourced and wf.correlation == "ticket"
    (ap,) = wf.applies
    assert (ap.event, ap.param) == ("Charged", "e")
    (assign,) = ap.body
    assert isinstance(assign, ir.AssignState) and assign.field == "total"
    assert isinstance(wf.creates[0].body[-1], ir.SaveInstance)


def test_declarations() -> None:
    c = ctx()
    t = c.aggregate("Ticket")
    assert t.crudish and t.unique == (("code",), ("customer", "dueAt"))
    assert t.factory is not None and [p.name for p in t.factory.params] == [
        "code",
        "customer",
        "dueAt",
    ]
    assert isinstance(t.factory.body[0], ir.Precondition)
    # `status` is readOnly: the crudish PATCH leaves it to the operations
    assert [f.name for f in t.updatable_fields] == ["customer", "dueAt", "priority"]
    assert [f.name for f in t.fields if f.read_only] == ["status"]
    ops = {o.name: o for o in t.operations}
    assert ops["touch"].private and not ops["touch"].extern
    assert ops["notify"].extern and ops["notify"].body == () and ops["notify"].result is None
    assert ops["score"].extern and ops["score"].result == ir.INT
    slack = next(f for f in t.functions if f.name == "slack")
    assert slack.value is None and [type(s) for s in slack.body] == [
        ir.Let,
        ir.Precondition,
        ir.Return,
    ]
    repo = c.repositories[0]
    finds = {f.name: f for f in repo.finds}
    assert finds["byCode"].fields == ("code",) and finds["byCode"].cardinality == "optional"
    assert finds["byCustomerAndDueAt"].fields == ("customer", "dueAt")
    assert finds["byCustomer"].cardinality == "many"
    crit = {x.name: x for x in c.criteria}
    assert crit["DueOpen"].aggregate == "Ticket" and crit["AllOpen"].params == ()
    ret = {x.name: x for x in c.retrievals}
    assert ret["Due"].criterion == "DueOpen" and ret["Due"].args[0] == ir.Param(
        "asOf", ir.DATETIME, "asOf"
    )
    assert ret["Opened"].criterion == "AllOpen" and ret["Opened"].args == ()
    (svc,) = c.services
    methods = {m.name: m for m in svc.methods}
    assert methods["escalateBoth"].mutates == ("a", "b")
    assert methods["bothOpen"].mutates == () and isinstance(methods["bothOpen"].body[0], ir.Return)
    kinds = {h.name: (h.kind, h.transactional, h.isolation) for h in c.handlers}
    assert kinds["BumpByCode"] == ("command", True, "serializable")
    assert kinds["DueTickets"] == ("query", False, None)
    assert handler(c, "DueTickets").result == ir.ListType(ir.AggregateType("Ticket", "Support"))


def test_service_calls_and_aggregate_function_calls() -> None:
    c = ctx()
    body = handler(c, "EscalatePair").body
    let = next(s for s in body if isinstance(s, ir.Let))
    assert isinstance(let.value, ir.ServiceCall) and let.value.method == "bothOpen"
    call = next(s for s in body if isinstance(s, ir.CallService))
    assert call.mutates == ("x", "y")
    assert saves(body) == ["x", "y"]
    ret = handler(c, "Slack").body[-1]
    assert isinstance(ret, ir.Return) and isinstance(ret.value, ir.FunctionCall)
    assert ret.value.owner == "aggregate" and ret.value.aggregate == "Ticket"
    assert ret.value.receiver == ir.Local("t", ir.AggregateType("Ticket", "Support"), "t")


def test_factory_binds_create_arguments() -> None:
    body = create_body(ctx(), "openTicket")
    creates = [s for s in body if isinstance(s, ir.CreateAggregate)]
    assert all([n for n, _ in s.args] == ["code", "customer", "dueAt"] for s in creates)


def test_return_inside_a_branch_saves_what_is_pending_first() -> None:
    model = """
context S {
  aggregate A { n: int = 0  operation bump() { n := n + 1 } }
  repository As for A { }
  commandHandler H(x: A id, y: A id): int {
    let a = As.getById(x)
    a.bump()
    if let b = As.findById(y) {
      b.bump()
      return 1
    }
    return 0
  }
}
"""
    result = compile_sources({"s.loom": model})
    assert result.ok and result.model is not None, render_text(result.diagnostics, result.sources)
    body = result.model.contexts[0].handlers[0].body
    branch = body[2]
    assert isinstance(branch, ir.IfLet)
    assert saves(branch.then) == ["a", "b"] and isinstance(branch.then[-1], ir.Return)
    assert saves(body) == ["a"] and isinstance(body[-1], ir.Return)
