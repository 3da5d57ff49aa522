"""given / when / then for workflows written in `.loom`: the real compiler, the real generated
steps, run with no HTTP and no database set up by the test (examples/scheduling, and ledger.loom
for an eventSourced workflow)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from loom.runtime import NotFound, Refused
from loom.runtime.processes import Timeout
from loom.testing import Call, ModelUsageError, given_process, load_model

ROOT = Path(__file__).resolve().parents[2]
SCHEDULING = load_model(ROOT / "examples/scheduling/scheduling.loom")
LEDGER = load_model(Path(__file__).with_name("ledger.loom"))
AT = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)

deadline = SCHEDULING.workflow("Scheduling.ConfirmationDeadline")
deposit = SCHEDULING.workflow("DepositHold")  # one context has it: its bare name will do
reminder = SCHEDULING.workflow("Scheduling.Reminder")
ledger = LEDGER.workflow("Billing.Ledger")


def appointment(status: str = "Requested") -> Any:
    return SCHEDULING.aggregate(
        "Scheduling.Appointment",
        patient="Ada",
        practitioner="Dr Who",
        startsAt=AT + timedelta(days=1),
        confirmBefore=AT,
        status=status,
    )


def charged(invoice: object, amount: int) -> Any:
    return LEDGER.event("Billing.Charged", invoice=invoice, amount=amount)


# -- a correlated process with timeouts (the confirmation deadline) ------------------------------


def test_requested_arms_the_deadline_at_its_instant() -> None:
    a = uuid4()
    requested = SCHEDULING.event("Scheduling.AppointmentRequested", appointment=a, confirmBefore=AT)
    (
        given_process(deadline)
        .when(requested)
        .then_state({"appointment": a})
        .then_timeouts([Timeout("deadline", at=AT)])
        .then_cancelled([])
        .then_commands([])
        .then_calls([])
        .then_ended(False)
    )


def test_confirmed_in_time_disarms_and_completes() -> None:
    a = uuid4()
    confirmed = SCHEDULING.event("AppointmentConfirmed", appointment=str(a))  # text: an id
    (
        given_process(deadline, {"appointment": a})
        .when(confirmed)
        .then_cancelled(["deadline"])
        .then_timeouts([])
        .then_ended()
    )


def test_cancelled_completes_without_cancelling_by_name() -> None:
    a = uuid4()
    cancelled = SCHEDULING.event("AppointmentCancelled", appointment=a, reason="ill")
    given_process(deadline, {"appointment": a}).when(cancelled).then_cancelled([]).then_ended()


def test_no_instance_ignores_a_reactor() -> None:
    confirmed = SCHEDULING.event("AppointmentConfirmed", appointment=uuid4())
    given_process(deadline).when(confirmed).then_ignored()


def test_the_deadline_expires_the_appointment() -> None:
    a = appointment()
    (
        given_process(deadline, {"appointment": a.id}, aggregates=[a])
        .when(deadline.timeout("deadline"))
        .then_calls(["Appointment.expire"])
        .then_calls([Call("Appointment", "expire", a.id, {})])
        .then_commands([SCHEDULING.event("AppointmentExpired", appointment=a.id)])
        .then_ended()
    )
    assert a.version == 0 and a.status == "Requested"  # the given aggregate is not touched


def test_the_deadline_leaves_a_confirmed_appointment_alone() -> None:
    a = appointment()
    a.confirm()  # its AppointmentConfirmed is the given's, not the step's: never delivered
    (
        given_process(deadline, {"appointment": a.id}, aggregates=[a])
        .when(deadline.timeout("deadline"))
        .then_calls([])
        .then_commands([])
        .then_ended()
    )


def test_the_deposit_deadline_releases_the_slot() -> None:
    a = uuid4()
    held = SCHEDULING.event("SlotHeld", appointment=a)
    given_process(deposit).when(held).then_timeouts(
        [Timeout("deposit", after=timedelta(minutes=15))]
    )
    slot = appointment("AwaitingDeposit")
    then = given_process(deposit, {"appointment": slot.id}, aggregates=[slot]).when(
        deposit.timeout("deposit")
    )
    then.then_calls([("Appointment.release", {"reason": "deposit-not-received"})]).then_ended()
    then.then_calls([{"aggregate": "Appointment", "id": slot.id}])
    then.then_calls([lambda call: call.args == {"reason": "deposit-not-received"}])
    then.then_commands([{"appointment": slot.id, "reason": "deposit-not-received"}])


def test_a_reminder_counts_emits_and_ends() -> None:
    a = uuid4()
    (
        given_process(reminder, {"appointment": a, "sent": 2})
        .when(reminder.timeout("remind"))
        .then_state({"appointment": a, "sent": 3})
        .then_commands([{"appointment": a}])
        .then_timeouts([])
        .then_ended()
    )


def test_a_step_that_fails_raises_what_it_raises() -> None:
    missing = uuid4()  # no aggregate given: the timeout's getById finds none
    with pytest.raises(NotFound):
        given_process(deadline, {"appointment": missing}).when(deadline.timeout("deadline"))


# -- an eventSourced workflow: given the events so far -------------------------------------------


def test_the_events_so_far_fold_into_the_state() -> None:
    invoice = LEDGER.aggregate("Billing.Invoice", amount=12)
    then = given_process(
        ledger,
        {"invoice": invoice.id},
        events=[charged(invoice.id, 5), charged(invoice.id, 7)],
        aggregates=[invoice],
    ).when(ledger.timeout("settle"))
    then.then_state({"invoice": invoice.id, "total": 12, "charges": 2}).then_ended()
    then.then_calls(
        [
            ("Invoice.settle", {"by": "ledger"}),
            ("Receipt.create", {"invoice": invoice.id, "total": 12}),
        ]
    )
    then.then_commands([LEDGER.event("Billing.Settled", invoice=invoice.id, total=12)])
    then.then_timeouts([]).then_cancelled([])


def test_a_reaction_folds_what_it_emits() -> None:
    i = uuid4()
    refunded = LEDGER.event("Billing.Refunded", invoice=i, amount=2)
    (
        given_process(ledger, {"invoice": i}, events=[charged(i, 5), charged(i, 7)])
        .when(refunded)
        .then_state({"invoice": i, "total": 10, "charges": 3})
        .then_commands([charged(i, -2)])
        .then_timeouts([Timeout("settle", after=timedelta(hours=2))])
        .then_ended(False)
    )


def test_an_eventsourced_starter_emits_and_folds() -> None:
    i = uuid4()
    (
        given_process(ledger)
        .when(LEDGER.event("Billing.Opened", invoice=i, first=5))
        .then_state({"invoice": i, "total": 5, "charges": 1})
        .then_commands([charged(i, 5)])
        .then_timeouts(["settle"])
    )


def test_a_refused_precondition_raises() -> None:
    i = uuid4()
    refunded = LEDGER.event("Billing.Refunded", invoice=i, amount=9)
    with pytest.raises(Refused, match="a refund cannot exceed the total"):
        given_process(ledger, {"invoice": i}, events=[charged(i, 5)]).when(refunded)


DISPATCH = """
context Shipping {
  aggregate Parcel { order: Sales.Order id  sent: bool = false  operation send() { sent := true } }
  repository Parcels for Parcel { }
  event ParcelSent { parcel: Parcel id, order: Sales.Order id }

  workflow Dispatch {
    order: Sales.Order id
    parcels: int = 0
    create(e: Sales.OrderPlaced) by e.order {
      let p = Parcel.create({ order: e.order })
      parcels := parcels + 1
    }
    on(e: ParcelSent) by e.order {
      parcels := parcels - 1
    }
  }
}
context Sales {
  aggregate Order { total: decimal }
  event OrderPlaced { order: Order id, at: datetime, total: decimal }
}
"""


def test_a_workflow_that_is_no_process(tmp_path: Path) -> None:
    """The docs' Dispatch (language.md, "Reactions"): another context's event starts it, its step
    creates an aggregate; it keeps no timeouts and never ends."""
    (tmp_path / "dispatch.loom").write_text(DISPATCH)
    model = load_model(tmp_path / "dispatch.loom")
    dispatch = model.workflow("Dispatch")
    order = uuid4()
    placed = model.event("OrderPlaced", order=order, at="2030-01-07T09:00:00Z", total="12.50")
    then = given_process(dispatch, {"order": order, "parcels": 1}).when(placed)
    then.then_state({"order": order, "parcels": 2}).then_ended(False).then_timeouts([])
    then.then_calls([("Parcel.create", {"order": order, "sent": False})])
    sent = model.event("ParcelSent", parcel=uuid4(), order=order)
    given_process(dispatch, {"order": order, "parcels": 2}).when(sent).then_state(
        {"order": order, "parcels": 1}
    )


def test_a_tenanted_step_runs_for_its_tenant() -> None:
    follow_up = LEDGER.workflow("Desk.FollowUp")
    ticket = LEDGER.aggregate("Desk.Ticket")
    (
        given_process(follow_up, {"ticket": ticket.id}, aggregates=[ticket], tenant="acme")
        .when(follow_up.timeout("remind"))
        .then_calls([Call("Ticket", "remind", ticket.id, {})])
        .then_ended()
    )
    opened = LEDGER.event("Desk.TicketOpened", ticket=ticket.id)
    given_process(follow_up, tenant="acme").when(opened).then_timeouts(["remind"])
    with pytest.raises(ModelUsageError, match="is in a tenanted context: name the tenant"):
        given_process(follow_up)
    with pytest.raises(ModelUsageError, match="is not in a tenanted context"):
        given_process(ledger, tenant="acme")


async def test_an_async_test_runs_steps_too() -> None:
    held = SCHEDULING.event("SlotHeld", appointment=uuid4())
    given_process(deposit).when(held).then_timeouts(["deposit"]).then_ended(False)


# -- what went wrong, said plainly ----------------------------------------------------------------
# Some mistakes are wrong in their types too, on purpose: the kit must name them at run time for a
# test that is not type-checked; mypy is told so on their lines.


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (
            lambda: SCHEDULING.workflow("Scheduling.ConfirmationDeadlin"),
            "no workflow 'Scheduling.ConfirmationDeadlin' \\(did you mean 'Scheduling.Confi",
        ),
        (
            lambda: LEDGER.event("Opened", invoice=uuid4()),
            "in several contexts: name one of Billing.Opened, Shipping.Opened",
        ),
        (
            lambda: SCHEDULING.event("SlotHeld", appointmnet=uuid4()),
            "SlotHeld has no field 'appointmnet' \\(did you mean 'appointment'\\?\\); its fields",
        ),
        (
            lambda: SCHEDULING.event("SlotHeld", appointment="a-1"),
            "event Scheduling.SlotHeld: appointment: Input should be a valid UUID",
        ),
        (lambda: SCHEDULING.event("SlotHeld"), "appointment: Field required"),
        (lambda: SCHEDULING.aggregate("Scheduling.Appointmnt"), "no aggregate"),
        (
            lambda: given_process(reminder, {"appointment": uuid4(), "snt": 1}),
            "the state of Scheduling.Reminder has no field 'snt'",
        ),
        (
            lambda: given_process(reminder, {"appointment": uuid4(), "sent": "many"}),
            "sent: Input should be a valid integer",
        ),
        (lambda: given_process(reminder, {"sent": 1}), "needs its key: state={'appointment': …}"),
        (lambda: given_process(reminder, ["sent"]), "is a dict of its fields by the model's names"),  # type: ignore[call-overload]
        (
            lambda: given_process(deadline, {"appointment": uuid4()}, events=[charged(uuid4(), 1)]),
            "Scheduling.ConfirmationDeadline is not eventSourced",
        ),
        (
            lambda: given_process(
                ledger,
                {"invoice": uuid4()},
                events=[LEDGER.event("Billing.Settled", invoice=uuid4(), total=1)],
            ),
            "has no apply\\(e: Billing.Settled\\).*it applies: Billing.Charged",
        ),
        (
            lambda: given_process(deadline, {"appointment": uuid4()}, aggregates=[object()]),  # type: ignore[list-item]
            "is not an aggregate of this model",
        ),
        (lambda: given_process(SCHEDULING.workflow("requestAppointment")), "keeps no instance"),
        (
            lambda: given_process(deadline, process=object()),  # type: ignore[call-overload]
            "`process=` is for a hand-written process",
        ),
        (lambda: given_process({"n": 1}, {"n": 2}), "follow a workflow"),  # type: ignore[call-overload]
        (
            lambda: deadline.timeout("deadlin"),
            "no timeout 'deadlin' \\(did you mean 'deadline'\\?\\); its timeouts: deadline",
        ),
        (
            lambda: given_process(deadline).when(SCHEDULING.event("SlotHeld", appointment=uuid4())),
            "does not react to Scheduling.SlotHeld; its reactions: create\\(e: Scheduling.Appoi",
        ),
        (
            lambda: given_process(deadline).when(deadline.timeout("deadline")),
            "a timeout fires on an instance",
        ),
        (
            lambda: given_process(deadline, {"appointment": uuid4()}).when(
                deposit.timeout("deposit")
            ),
            "is a timeout of Scheduling.DepositHold",
        ),
        (
            lambda: given_process(deadline).when("AppointmentConfirmed"),  # type: ignore[arg-type]
            "when takes an event of the model",
        ),
    ],
)
def test_mistakes_are_named(mistake: object, message: str) -> None:
    with pytest.raises(ModelUsageError, match=message):
        mistake()  # type: ignore[operator]


def test_then_names_what_the_step_did() -> None:
    a = appointment()
    then = given_process(deadline, {"appointment": a.id}, aggregates=[a]).when(
        deadline.timeout("deadline")
    )
    with pytest.raises(
        AssertionError,
        match=r"calls: expected 0, decided 1: \['Appointment.expire\(\{\}\)'\]",
    ):
        then.then_calls([])
    with pytest.raises(
        AssertionError, match=r"call 1: expected Appointment.confirm, the step called"
    ):
        then.then_calls(["Appointment.confirm"])
    with pytest.raises(AssertionError, match=r"expected Appointment.expire\(\{'why': 1\}\)"):
        then.then_calls([("Appointment.expire", {"why": 1})])
    with pytest.raises(AssertionError, match="expected the process not to end"):
        then.then_ended(False)
    with pytest.raises(ModelUsageError, match="has no state field 'appointmnet'"):
        then.then_state({"appointmnet": a.id})
    with pytest.raises(AssertionError, match="state: expected"):
        then.then_state({"appointment": uuid4()})
    ignored = given_process(deadline).when(
        SCHEDULING.event("AppointmentConfirmed", appointment=a.id)
    )
    with pytest.raises(AssertionError, match="expected aggregate calls, but the step ignored"):
        ignored.then_calls([])
