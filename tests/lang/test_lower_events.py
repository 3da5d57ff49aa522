"""Lowering of reactions, `if`, projections and channels (issue 4). The model is
data/ok/events.loom."""

from __future__ import annotations

from pathlib import Path

from loom.lang import compile_files, render_text
from loom.model import ir

OK = Path(__file__).parent / "data" / "ok" / "events.loom"


def model() -> ir.Model:
    result = compile_files([str(OK)])
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model


def desk() -> ir.Context:
    return model().contexts[0]


def workflow(c: ir.Context, name: str) -> ir.Workflow:
    return next(w for w in c.workflows if w.name == name)


def test_if_branches_save_what_they_touch() -> None:
    body = workflow(desk(), "triage").creates[0].body
    load, branch = body[0], body[1]
    assert isinstance(load, ir.LoadById) and load.name == "t"
    assert isinstance(branch, ir.If) and branch.condition.text == "urgent"
    then = branch.then
    # `t` is bound outside the branch: like in an `if let`, it is saved where it was bound
    assert [type(s) for s in then] == [ir.CallOperation, ir.Emit]
    (elif_,) = branch.otherwise  # `else if` is an else block holding one `if`
    assert isinstance(elif_, ir.If) and elif_.condition.text == "level > 3"
    assert isinstance(elif_.then[0], ir.CreateAggregate)
    assert elif_.then[-1] == ir.Save("copy", "Tickets", "Ticket", fresh=True)
    assert isinstance(elif_.otherwise[0], ir.Precondition)
    # what a branch creates is saved at its end; `t`, mutated in a branch, at the body's exit
    assert body[2:] == (ir.Save("t", "Tickets", "Ticket", fresh=False),)


def test_a_starter_binds_and_an_on_routes() -> None:
    wf = workflow(desk(), "Watch")
    assert wf.creates == () and wf.correlation == "ticket"
    start, on = wf.reactions
    assert (start.kind, start.event, start.param) == (
        "create",
        ir.EventType("Resolved", "Desk"),
        "e",
    )
    assert start.by is not None and start.by.text == "e.ticket"
    assert isinstance(start.body[0], ir.BindInstance) and start.body[0].key == start.by
    assert isinstance(start.body[1], ir.AssignState)
    assert isinstance(start.body[-1], ir.SaveInstance)
    assert on.kind == "on" and isinstance(on.body[0], ir.RouteInstance)
    assert isinstance(on.body[-1], ir.SaveInstance)


def test_a_stateless_reaction_has_no_instance() -> None:
    (r,) = workflow(desk(), "Mailer").reactions
    assert r.by is None
    assert [type(s) for s in r.body] == [ir.Precondition]


def test_projections_fold_into_keyed_rows() -> None:
    m = model()
    (by_email,) = m.contexts[0].projections
    assert by_email.key == "email"  # no id field: the first field keys the rows
    (r,) = by_email.reactions
    bind, count = r.body[0], r.body[1]
    assert isinstance(bind, ir.BindInstance) and bind.key.text == "e.email"  # `email := e.email`
    assert isinstance(count, ir.AssignState) and count.field == "count"
    assert isinstance(count.value, ir.Binary) and count.value.op == "+"  # `count += 1`
    assert isinstance(r.body[-1], ir.SaveInstance)
    (weekly,) = m.contexts[1].projections
    assert weekly.key == "ticket"
    (w,) = weekly.reactions
    assert w.event == ir.EventType("Resolved", "Desk")  # another context's event
    assert isinstance(w.body[0], ir.BindInstance)


def test_channels_keep_their_settings() -> None:
    m = model()
    (esc,) = m.contexts[0].channels
    assert esc.events == (ir.EventType("Escalated", "Desk"),)
    assert (esc.retention, esc.max_attempts, esc.backoff_ms) == ("log", 8, (250, 3_600_000))
    (mirror,) = m.contexts[1].channels
    assert mirror.events == (ir.EventType("Resolved", "Desk"),)
    assert (mirror.retention, mirror.max_attempts, mirror.backoff_ms) == ("work", 5, (1000, 300000))
