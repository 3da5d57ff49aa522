"""given / when / then for process steps: pure, no store, no bus (the seed's deadline example)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeGuard

import pytest

from loom.runtime import DomainEvent
from loom.runtime.processes import Decision, Timeout
from loom.testing._process import given_process

DEADLINE = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
State = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Booked(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.Booked"
    appointment: str
    confirm_before: datetime | None


@dataclass(frozen=True, kw_only=True)
class Expire(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.Expire"
    appointment: str
    at: datetime


class Deadline:
    name: ClassVar[str] = "Scheduling.ConfirmationDeadline"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[State]:
        return isinstance(value, dict) and {"appointment", "confirm_before"} <= value.keys()

    @staticmethod
    def requested(e: Booked, current: State | None) -> Decision[State] | None:
        if current is not None or e.confirm_before is None:
            return None
        state = {"appointment": e.appointment, "confirm_before": e.confirm_before.isoformat()}
        return Decision(state, timeouts=[Timeout("deadline", at=e.confirm_before)])

    @staticmethod
    def settled(current: State | None) -> Decision[State] | None:
        return None if current is None else Decision(current, cancel=["deadline"], ended=True)

    @staticmethod
    def timed_out(current: State | None) -> Decision[State] | None:
        assert current is not None
        at = datetime.fromisoformat(current["confirm_before"])
        return Decision(
            current, commands=[Expire(appointment=current["appointment"], at=at)], ended=True
        )


BOOKED = Booked(appointment="appointment-1", confirm_before=DEADLINE)
WATCHING: State = {"appointment": "appointment-1", "confirm_before": DEADLINE.isoformat()}
# no instance yet, typed: a bare None leaves mypy no state type to check the steps against
NO_INSTANCE: State | None = None


def test_armed_when_requested_for_its_deadline() -> None:
    (
        given_process(NO_INSTANCE, process=Deadline)
        .when(lambda current: Deadline.requested(BOOKED, current))
        .then_state(WATCHING)
        .then_timeouts([Timeout("deadline", at=DEADLINE)])
        .then_timeouts(["deadline"])
        .then_timeouts([{"name": "deadline", "at": DEADLINE}])
        .then_commands([])
        .then_cancelled([])
        .then_ended(False)
    )


def test_disarmed_and_ended_once_confirmed_in_time() -> None:
    given_process(WATCHING).when(Deadline.settled).then_cancelled(["deadline"]).then_ended()


def test_the_deadline_expires_the_appointment_at_its_instant() -> None:
    then = given_process(WATCHING).when(Deadline.timed_out).then_ended()
    then.then_commands([Expire])
    then.then_commands([{"appointment": "appointment-1", "at": DEADLINE}])
    then.then_commands([(Expire, {"at": DEADLINE})])
    then.then_commands([lambda c: isinstance(c, Expire) and c.at == DEADLINE])
    then.then_commands([Expire(appointment="appointment-1", at=DEADLINE)])


def test_ignored_steps() -> None:
    given_process(NO_INSTANCE).when(Deadline.settled).then_ignored()
    given_process(WATCHING).when(lambda cur: Deadline.requested(BOOKED, cur)).then_ignored()
    no_deadline = Booked(appointment="a-2", confirm_before=None)
    given_process(NO_INSTANCE).when(lambda cur: Deadline.requested(no_deadline, cur)).then_ignored()


def test_failures_say_what_the_step_decided() -> None:
    with pytest.raises(AssertionError, match="the step ignored the event"):
        given_process(NO_INSTANCE).when(Deadline.settled).then_state(WATCHING)
    with pytest.raises(AssertionError, match="expected the step to ignore"):
        given_process(WATCHING).when(Deadline.settled).then_ignored()
    then = given_process(WATCHING).when(Deadline.timed_out)
    with pytest.raises(AssertionError, match="command 1: expected a Booked"):
        then.then_commands([Booked])
    with pytest.raises(AssertionError, match="'at': datetime"):
        then.then_commands([{"at": DEADLINE + timedelta(minutes=1)}])
    with pytest.raises(AssertionError, match="commands: expected 0, decided 1"):
        then.then_commands([])
    with pytest.raises(AssertionError, match="the predicate refused"):
        then.then_commands([lambda c: False])
    with pytest.raises(AssertionError, match="timeouts: expected"):
        given_process(NO_INSTANCE).when(lambda cur: Deadline.requested(BOOKED, cur)).then_timeouts(
            [Timeout("deadline", after=timedelta(minutes=15))]
        )
    with pytest.raises(AssertionError, match="cancelled: expected"):
        given_process(WATCHING).when(Deadline.settled).then_cancelled([])
    with pytest.raises(AssertionError, match="expected the process not to end"):
        given_process(WATCHING).when(Deadline.settled).then_ended(False)


def test_states_the_process_would_refuse_are_refused() -> None:
    with pytest.raises(AssertionError, match=r"not a Scheduling.ConfirmationDeadline state"):
        given_process({"other": 1}, process=Deadline)
    with pytest.raises(AssertionError, match="is_state does not recognise"):
        given_process(WATCHING, process=Deadline).when(lambda cur: Decision({"n": 1}))


def test_decisions_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        Timeout("deadline")
    with pytest.raises(ValueError, match="exactly one of"):
        Timeout("deadline", at=DEADLINE, after=timedelta(1))
    with pytest.raises(ValueError, match="timezone-aware"):
        Timeout("deadline", at=datetime(2030, 1, 1))
    with pytest.raises(ValueError, match="cannot arm"):
        Decision({}, timeouts=[Timeout("t", after=timedelta(1))], ended=True)
    with pytest.raises(ValueError, match="one timeout per name"):
        Decision({}, timeouts=[Timeout("t", after=timedelta(1)), Timeout("t", at=DEADLINE)])
