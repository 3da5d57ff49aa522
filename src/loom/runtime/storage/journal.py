"""The journal of a workflow instance: the steps that moved it, newest last, kept in its own row.

A generated instance table has a `_steps` column (`loom.model.telemetry.STEPS_COLUMN`, found by
`storage.mapping.steps_column`; no field of the state). Each save of the instance appends one JSON line naming the step that saved it, in
the INSERT or UPDATE the save makes anyway: no statement more, and no read of the journal (the
UPDATE appends in SQL). Once the journal is longer than `KEPT_CHARS` characters, each append drops
its oldest line, so a long-lived instance keeps about its last 30 steps.

A step is what ran the body that saved the instance (`Step`):
- `reaction`: a handler of an event, delivered in process or from a channel (`service.reaction()`
  names it after the delivery);
- `timeout`: a fired timeout (the scheduler names it `<Process>.timeout(<name>)`);
- `command`: anything else, the workflow's own entry called by a request (`POST
  /api/workflows/reminder`) or by code, named after the process.

With it, the events the step had raised when it saved the instance: the aggregates' events of its
operations and its own `emit`s (a generated step saves its instance last, so all of them).

The operators' timeline of an instance reads it back (`http/instance_timeline.py`). A step that
found nothing to change (an event for an instance that has ended) saves nothing, so it is not
journaled: its inbox row and its trace still say it ran.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeAlias

from sqlalchemy import ColumnElement, bindparam, case, func, literal
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Integer

from loom.runtime.values.domain import DomainEvent

StepKind = Literal["reaction", "timeout", "command"]
# past this length an append drops the oldest line: about 30 steps of 250 characters
KEPT_CHARS = 8192
# the bound parameter of the appended line in an instance's UPDATE
LINE_PARAM = "_loom_step"
_NEWLINE = "\n"


@dataclass(frozen=True, slots=True)
class Step:
    """What is running a unit of work's body, for the journal of the instances it saves."""

    kind: StepKind
    name: str  # `Orders.PaymentDeadline.on(Payment.PaymentSucceeded)`
    event_type: str | None = None  # the event it applied (a reaction's)
    event_id: str | None = None  # the event's id; a timeout's job id
    correlation_id: str | None = None


# a unit of work's step, or what makes it when an instance's save first needs it (a reaction's:
# most reactions save no instance, so none is made for them)
StepOf: TypeAlias = Step | Callable[[], Step]


def step_of(step: StepOf | None) -> Step | None:
    return step() if callable(step) else step


def line(step: Step, at: datetime, raised: Sequence[DomainEvent]) -> str:
    """The journal's line for `step`, run at `at`, which had raised `raised` by then."""
    entry = {
        "at": at.isoformat(),
        "kind": step.kind,
        "step": step.name,
        "event_type": step.event_type,
        "event_id": step.event_id,
        "correlation_id": step.correlation_id,
        "raised": [event.event_type for event in raised],
    }
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


class _first_newline(FunctionElement[int]):
    """Where the first newline of a text is (1-based; 0 when none)."""

    type = Integer()
    inherit_cache = True


@compiles(_first_newline, "postgresql")
def _first_newline_pg(element: _first_newline, compiler: SQLCompiler, **kw: Any) -> str:
    return f"strpos({compiler.process(element.clauses, **kw)})"


@compiles(_first_newline)
def _first_newline_other(element: _first_newline, compiler: SQLCompiler, **kw: Any) -> str:
    return f"instr({compiler.process(element.clauses, **kw)})"


def appended(column: Any) -> ColumnElement[str]:
    """The UPDATE's new value of `column`: the journal with the line `LINE_PARAM` added, its
    oldest line dropped once it is longer than `KEPT_CHARS`."""
    new = bindparam(LINE_PARAM, type_=column.type)
    newline = literal(_NEWLINE, column.type)
    kept = case(
        (
            func.length(column) > KEPT_CHARS,
            func.substr(column, _first_newline(column, newline) + 1),
        ),
        else_=column,
    )
    return case((column.is_(None), new), else_=kept + newline + new)


def read(text: str | None) -> list[dict[str, Any]]:
    """The journal's entries, oldest first (a line that is not JSON, which Loom never writes, is
    skipped)."""
    if not text:
        return []
    out = []
    for raw in text.split(_NEWLINE):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out
