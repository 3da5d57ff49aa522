"""The timeline of one process instance: the steps that moved it, in the order they ran, read
from the journal its row keeps (`storage/journal.py`): reactions to events (delivered in process
or from a channel), fired timeouts, and commands (the workflow's own entry, called by a request).
A step that changed nothing (an event for an ended instance) saved nothing and is not listed: the
flow of its correlation shows it (docs/processes.md#instances-for-operators)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ValidationError

from loom.runtime.storage import journal


class StepOut(BaseModel):
    at: datetime  # when it ran
    kind: Literal["reaction", "timeout", "command"]
    # `Orders.PaymentDeadline.on(Payment.PaymentSucceeded)`, `Orders.PaymentDeadline.timeout(payment)`,
    # `Scheduling.Reminder` (a command)
    step: str
    event_type: str | None  # the event it applied (a reaction's)
    event_id: str | None  # the event's id; a timeout's job id; none for a command
    correlation_id: str | None
    # the events it had raised when it saved the instance: its operations' and its own emits
    raised: list[str] = []


def steps_of(text: str | None) -> list[StepOut]:
    """The steps a journal holds, oldest first (an entry that does not read as one is skipped:
    an operator's page must not fail on a row edited by hand)."""
    out = []
    for entry in journal.read(text):
        try:
            out.append(StepOut.model_validate(entry))
        except ValidationError:
            continue
    return out
