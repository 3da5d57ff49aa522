"""given / when / then for process-manager steps: pure, no store, no bus, no clock.

    given_process(None).when(lambda cur: Deadline.requested(booked, cur)) \\
        .then_state({"appointment": "a-1"}) \\
        .then_timeouts([Timeout("deadline", at=deadline)]) \\
        .then_commands([])

    given_process(watching).when(Deadline.confirmed).then_cancelled(["deadline"]).then_ended()
    given_process(None).when(Deadline.confirmed).then_ignored()

The `then_*` assertions are in `_then`. A workflow of a model (`load_model`) is tested the same
way, its steps run by `_step`: `given_process(model.workflow("Scheduling.ConfirmationDeadline"),
{"appointment": a}).when(confirmed).then_cancelled(["deadline"]).then_ended()`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

from loom.runtime import AggregateRoot, DomainEvent
from loom.runtime.processes import Decision, ProcessManager, Step
from loom.testing._model import ModelUsageError, Workflow
from loom.testing._step import GivenStep, given_workflow
from loom.testing._then import Then

S = TypeVar("S")


# a workflow is tested by its model's steps, whatever else a hand-written state may be
@overload
def given_process(  # type: ignore[overload-overlap]
    workflow: Workflow,
    state: Mapping[str, Any] | None = None,
    /,
    *,
    events: Sequence[DomainEvent] = (),
    aggregates: Sequence[AggregateRoot] = (),
    tenant: str | None = None,
) -> GivenStep: ...


@overload
def given_process(state: S | None, /, *, process: ProcessManager[S] | None = None) -> Given[S]: ...


def given_process(
    first: Any,
    state: Mapping[str, Any] | None = None,
    /,
    *,
    process: ProcessManager[Any] | None = None,
    events: Sequence[DomainEvent] = (),
    aggregates: Sequence[AggregateRoot] = (),
    tenant: str | None = None,
) -> Any:
    """The instance a step starts from.

    - `given_process(state, process=None)`: a hand-written step's state (None: no instance yet).
      With `process`, the given state and the decided one must be states `process.is_state`
      recognises, as the runner requires.
    - `given_process(workflow, state=None, events=(), aggregates=(), tenant=None)`: a workflow
      of a model (`load_model(…).workflow(name)`), its state by the model's field names (None:
      no instance yet), for an `eventSourced` one the `events` so far, the `aggregates` its step
      finds, and in a tenanted context the `tenant` it runs for (`_step`)."""
    if isinstance(first, Workflow):
        if process is not None:
            raise ModelUsageError("`process=` is for a hand-written process, not a workflow")
        return given_workflow(first, state, events, aggregates, tenant)
    if state is not None or events or aggregates or tenant is not None:
        raise ModelUsageError(
            "a state, `events=`, `aggregates=` and `tenant=` follow a workflow: "
            "given_process(model.workflow(name), state, …)"
        )
    if process is not None and first is not None and not process.is_state(first):
        raise AssertionError(f"the given state is not a {process.name} state: {first!r}")
    return Given(first, process)


class Given(Generic[S]):
    def __init__(self, state: S | None, process: ProcessManager[S] | None) -> None:
        self.state = state
        self.process = process

    def when(self, step: Step[S]) -> Then[S]:
        """Run the step once on the given state."""
        decision = step(self.state)
        if decision is not None and not isinstance(decision, Decision):
            raise AssertionError(f"a step answers a Decision or None, not {decision!r}")
        process = self.process
        if process is not None and decision is not None and not process.is_state(decision.state):
            raise AssertionError(
                f"the step decided a state {process.name}.is_state does not recognise: "
                f"{decision.state!r}"
            )
        return Then(decision)
