"""Lowering of process managers (issue 5): `schedule`, `cancel`, `complete`, `on timeout` and
context `timer`s. The model is examples/scheduling/scheduling.loom."""

from __future__ import annotations

from pathlib import Path

from loom.lang import compile_files, compile_sources, render_text
from loom.model import ir

ROOT = Path(__file__).resolve().parents[2]
SCHEDULING = ROOT / "examples" / "scheduling" / "scheduling.loom"


def context() -> ir.Context:
    result = compile_files([str(SCHEDULING)])
    assert result.ok and not result.diagnostics, render_text(result.diagnostics, result.sources)
    assert result.model is not None
    return result.model.contexts[0]


def workflow(c: ir.Context, name: str) -> ir.Workflow:
    return next(w for w in c.workflows if w.name == name)


def test_process_workflows_are_marked() -> None:
    c = context()
    assert {w.name: w.process for w in c.workflows} == {
        "requestAppointment": False,
        "holdSlot": False,
        "ConfirmationDeadline": True,
        "DepositHold": True,
        "Reminder": True,
    }


def test_schedule_at_and_after() -> None:
    c = context()
    starter = workflow(c, "ConfirmationDeadline").reactions[0]
    bind, schedule, save = starter.body
    assert isinstance(bind, ir.BindInstance)
    assert isinstance(schedule, ir.ScheduleTimeout) and schedule.name == "deadline"
    assert schedule.after_ms is None and schedule.at is not None
    assert schedule.at.type == ir.DATETIME and schedule.at.text == "e.confirmBefore"
    assert isinstance(save, ir.SaveInstance)
    (_, after, _) = workflow(c, "DepositHold").reactions[0].body
    assert isinstance(after, ir.ScheduleTimeout)
    assert after == ir.ScheduleTimeout("deposit", None, 15 * 60_000, after.origin)


def test_cancel_complete_and_on_timeout() -> None:
    wf = workflow(context(), "ConfirmationDeadline")
    confirmed = wf.reactions[1].body
    assert [type(s) for s in confirmed] == [
        ir.RouteInstance,
        ir.CancelTimeout,
        ir.CompleteInstance,
        ir.SaveInstance,
    ]
    (timeout,) = wf.timeouts
    assert timeout.name == "deadline" and timeout.origin.line > 0
    # no BindInstance / RouteInstance: the instance is the one the timer row names
    assert [type(s) for s in timeout.body] == [
        ir.LoadById,
        ir.If,
        ir.CompleteInstance,
        ir.Save,  # the appointment, at the exit, then the instance
        ir.SaveInstance,
    ]


def test_context_timer() -> None:
    (timer,) = context().timers
    assert (timer.name, timer.context) == ("expireUnconfirmed", "Scheduling")
    assert timer.every_ms == 3_600_000
    assert [type(s) for s in timer.body] == [ir.Load, ir.ForEach]


def test_durations() -> None:
    src = """
    context C {
      aggregate A { n: int = 0 }
      event E { a: A id }
      workflow W {
        a: A id
        create(e: E) by e.a {
          schedule s1 after 30s
          schedule s2 after 2h
          schedule s3 after 3d
          schedule s4 after 250ms
        }
        on timeout s1 { }
        on timeout s2 { }
        on timeout s3 { }
        on timeout s4 { }
      }
    }
    """
    result = compile_sources({"d.loom": src})
    assert result.model is not None, [d.message for d in result.diagnostics]
    body = result.model.contexts[0].workflows[0].reactions[0].body
    got = [s.after_ms for s in body if isinstance(s, ir.ScheduleTimeout)]
    assert got == [30_000, 7_200_000, 259_200_000, 250]
