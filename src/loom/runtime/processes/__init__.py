"""loom.runtime.processes — process managers: steps that decide, a runner that keeps their state
with optimistic concurrency, and durable timeouts (docs/processes.md).

A process manager is a class with a `name`, a state `version` and `is_state`; its steps are plain
functions from the current state (None: no instance yet) to a `Decision`, or None to ignore:

    class ConfirmationDeadline:
        name = "Scheduling.ConfirmationDeadline"
        version = 1

        @staticmethod
        def is_state(value: object) -> TypeGuard[dict[str, str]]:
            return isinstance(value, dict) and "appointment" in value

        @staticmethod
        def requested(e: AppointmentRequested, current: dict[str, str] | None) -> Decision | None:
            if current is not None:
                return None                                   # already watching: ignore
            return Decision({"appointment": str(e.appointment)},
                            timeouts=[Timeout("deadline", at=e.confirm_before)])

        @staticmethod
        def confirmed(current: dict[str, str] | None) -> Decision | None:
            return None if current is None else Decision(current, cancel=["deadline"], ended=True)

        @staticmethod
        def timed_out(current: dict[str, str] | None) -> Decision | None:
            return Decision(current, commands=[ExpireAppointment(...)], ended=True)

Wiring (the generated code does the same):

    runner = service.processes                       # a ProcessRunner on the SQL store
    async with service.reaction() as work:           # in a reaction: one unit of work
        await runner.run(ConfirmationDeadline, e.appointment,
                         lambda cur: ConfirmationDeadline.requested(e, cur), work=work)

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        await runner.timeout(ConfirmationDeadline, due, ConfirmationDeadline.timed_out, work=work)
    service.timeouts.register(ConfirmationDeadline.name, on_timeout)

`run` loads the instance, refuses a state another version saved (`ProcessStateRefused`), ignores
an ended instance, decides, saves with a version check (`ConcurrencyConflict` on a lost race),
disarms and arms the timeouts, and emits the commands, all in the one unit of work. `timeout`
does the same for a due timeout, but only while `due.job_id` is still the armed job.

Public names: Decision, Timeout, Step, ProcessManager, ProcessRunner, Outcome, TimeoutDue,
Instance, PendingTimeout, DeadTimeout, Tick, ProcessStateRefused, ProcessStore,
SqlProcessStore, InMemoryProcessStore.
"""

from loom.runtime.processes.runner import *  # noqa: F403
