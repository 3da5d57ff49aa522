"""Time in the checker (docs/language.md, "Time"): the types of time arithmetic, the time functions
and literals, and `schedule … after` with a duration expression, as lowered into the IR."""

from __future__ import annotations

import pytest

from loom.lang import compile_sources
from loom.model import ir


def _derived(decl: str, expr: str) -> ir.Derived:
    src = f"""context Hotel {{
  aggregate Booking {{
    night: date
    startsAt: datetime
    stay: duration = 1d
    n: int = 2
    derived x: {decl} = {expr}
  }}
}}"""
    result = compile_sources({"t.loom": src})
    assert result.model is not None, [str(d) for d in result.diagnostics]
    [agg] = result.model.contexts[0].aggregates
    [derived] = agg.derived
    return derived


@pytest.mark.parametrize(
    ("decl", "expr", "type"),
    [
        ("datetime", "startsAt + 10m", ir.DATETIME),
        ("datetime", "10m + startsAt", ir.DATETIME),
        ("datetime", "startsAt - stay * n", ir.DATETIME),
        ("duration", "startsAt - now()", ir.DURATION),
        ("date", "night + 1d", ir.DATE),
        ("date", "night - days(n)", ir.DATE),
        ("duration", "night - today()", ir.DURATION),
        ("duration", "n * 15m + seconds(30) - -stay", ir.DURATION),
        ("bool", "stay < 2h", ir.BOOL),
        ("bool", "dateOf(startsAt) == night", ir.BOOL),
        ("bool", "startOf(night) <= startsAt", ir.BOOL),
        ("date", 'date("2028-02-29")', ir.DATE),
        ("datetime", 'datetime("2026-03-01T14:00:00+02:00")', ir.DATETIME),
    ],
)
def test_time_expressions_are_typed(decl: str, expr: str, type: ir.Type) -> None:
    assert _derived(decl, expr).value.type == type


def test_literals_are_exact_and_utc() -> None:
    value = _derived("duration", "1500ms").value
    assert isinstance(value, ir.Literal_) and value.value == 1_500_000  # microseconds
    value = _derived("datetime", 'datetime("2026-03-01T14:00:00+02:00")').value
    assert isinstance(value, ir.Literal_) and value.value == "2026-03-01T12:00:00Z"
    call = _derived("duration", "minutes(n)").value
    assert isinstance(call, ir.TimeCall) and call.function == "minutes"


def test_a_default_may_add_a_duration_to_now() -> None:
    src = "context C { aggregate A { holdUntil: datetime = now() + 10m  n: int = 0 } }"
    result = compile_sources({"t.loom": src})
    assert result.ok, [str(d) for d in result.diagnostics]
    assert result.model is not None
    [field] = [f for f in result.model.contexts[0].aggregates[0].fields if f.name == "holdUntil"]
    assert isinstance(field.default, ir.Binary) and field.default.type == ir.DATETIME


def test_schedule_after_a_duration_expression() -> None:
    src = """context C {
  aggregate A { n: int = 0 }
  event Held { a: A id, minutes: int }
  workflow W {
    a: A id
    create(e: Held) by e.a {
      schedule soon after 15m
      schedule later after minutes(e.minutes)
    }
    on timeout soon { }
    on timeout later { }
  }
}"""
    result = compile_sources({"t.loom": src})
    assert result.model is not None, [str(d) for d in result.diagnostics]
    [wf] = result.model.contexts[0].workflows
    stmts = [s for r in wf.reactions for s in r.body if isinstance(s, ir.ScheduleTimeout)]
    assert [(s.name, s.after_ms, s.after is None) for s in stmts] == [
        ("soon", 900_000, True),
        ("later", None, False),
    ]
