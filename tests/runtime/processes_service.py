# ruff: noqa: B008  (FastAPI dependencies as defaults, as generated code writes them)
"""A hand-written Scheduling service with two process managers, in the shape generated code takes:
the process tests drive it over HTTP and move time with the test kit's `VirtualClock`.

- ConfirmationDeadline: an appointment requested with a deadline arms a timeout; confirmed in
  time, the timeout is disarmed and the instance ends; the deadline passing first expires the
  appointment (a command) and ends the instance.
- DepositHold: a held slot waits 15 minutes for its deposit; paid in time, the process confirms
  the appointment; otherwise it releases the slot (the compensation of "hold the slot"). The
  payment is a request that runs the step in its own unit of work, so a lost race answers 409.
- a context timer sweeps every 5 minutes: it expires requested appointments whose deadline passed
  (the safety net beside the timeout).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any, ClassVar, NewType, TypeGuard
from uuid import UUID

from fastapi import APIRouter, Depends, FastAPI
from pydantic import BaseModel, ConfigDict
from sqlalchemy import Column, Integer, MetaData, String, Table, Uuid

from loom.runtime import (
    PROBLEM_RESPONSES,
    AggregateRoot,
    Backoff,
    Channel,
    DomainEvent,
    LoomRoute,
    Repository,
    Service,
    Work,
    create_app,
    get_service,
    new_id,
    now,
    require,
)
from loom.runtime.processes import Decision, Tick, Timeout, TimeoutDue
from loom.runtime.types import UtcDateTime

AppointmentId = NewType("AppointmentId", UUID)
DEPOSIT_WINDOW = timedelta(minutes=15)
SWEEP_EVERY = timedelta(minutes=5)


class Status(enum.StrEnum):
    REQUESTED = "Requested"
    CONFIRMED = "Confirmed"
    EXPIRED = "Expired"
    RELEASED = "Released"


# ---------------------------------------------------------------- domain.py
@dataclass(frozen=True, kw_only=True)
class AppointmentRequested(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.AppointmentRequested"
    appointment: AppointmentId
    confirm_before: datetime


@dataclass(frozen=True, kw_only=True)
class AppointmentConfirmed(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.AppointmentConfirmed"
    appointment: AppointmentId


@dataclass(frozen=True, kw_only=True)
class SlotHeld(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.SlotHeld"
    appointment: AppointmentId


# commands the processes send: messages whose handlers perform them
@dataclass(frozen=True, kw_only=True)
class ExpireAppointment(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.ExpireAppointment"
    appointment: AppointmentId
    at: datetime


@dataclass(frozen=True, kw_only=True)
class ConfirmAppointment(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.ConfirmAppointment"
    appointment: AppointmentId


@dataclass(frozen=True, kw_only=True)
class ReleaseSlot(DomainEvent):
    event_type: ClassVar[str] = "Scheduling.ReleaseSlot"
    appointment: AppointmentId
    reason: str


@dataclass(eq=False, kw_only=True)
class Appointment(AggregateRoot):
    slot: str
    status: Status = Status.REQUESTED
    confirm_before: datetime | None = None
    id: AppointmentId = field(default_factory=lambda: AppointmentId(new_id()))

    @classmethod
    def request(cls, slot: str, confirm_before: datetime) -> Appointment:
        a = cls(slot=slot, confirm_before=confirm_before)
        a._raise_event(AppointmentRequested(appointment=a.id, confirm_before=confirm_before))
        return a

    @classmethod
    def hold(cls, slot: str) -> Appointment:
        a = cls(slot=slot)
        a._raise_event(SlotHeld(appointment=a.id))
        return a

    def _requested(self, op: str) -> None:
        rule = f"Appointment.{op}: precondition status == Requested"
        require(self.status == Status.REQUESTED, kind="precondition", rule=rule, detail=rule)

    def confirm(self) -> None:
        self._requested("confirm")
        self.status = Status.CONFIRMED
        self._raise_event(AppointmentConfirmed(appointment=self.id))

    def expire(self) -> None:
        self._requested("expire")
        self.status = Status.EXPIRED

    def release(self) -> None:
        self._requested("release")
        self.status = Status.RELEASED


# ---------------------------------------------------------------- processes
State = dict[str, Any]


class ConfirmationDeadline:
    name: ClassVar[str] = "Scheduling.ConfirmationDeadline"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[State]:
        return isinstance(value, dict) and {"appointment", "confirm_before"} <= value.keys()

    @staticmethod
    def requested(e: AppointmentRequested, current: State | None) -> Decision[State] | None:
        if current is not None:
            return None
        state = {"appointment": str(e.appointment), "confirm_before": e.confirm_before.isoformat()}
        return Decision(state, timeouts=[Timeout("deadline", at=e.confirm_before)])

    @staticmethod
    def confirmed(current: State | None) -> Decision[State] | None:
        return None if current is None else Decision(current, cancel=["deadline"], ended=True)

    @staticmethod
    def timed_out(current: State | None) -> Decision[State] | None:
        assert current is not None
        at = datetime.fromisoformat(current["confirm_before"])
        command = ExpireAppointment(appointment=AppointmentId(UUID(current["appointment"])), at=at)
        return Decision(current, commands=[command], ended=True)


class DepositHold:
    name: ClassVar[str] = "Scheduling.DepositHold"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[State]:
        return isinstance(value, dict) and "appointment" in value

    @staticmethod
    def held(e: SlotHeld, current: State | None) -> Decision[State] | None:
        if current is not None:
            return None
        state = {"appointment": str(e.appointment), "paid": False}
        return Decision(state, timeouts=[Timeout("deposit", after=DEPOSIT_WINDOW)])

    @staticmethod
    def paid(current: State | None) -> Decision[State] | None:
        if current is None:
            return None
        command = ConfirmAppointment(appointment=AppointmentId(UUID(current["appointment"])))
        state = {**current, "paid": True}
        return Decision(state, commands=[command], cancel=["deposit"], ended=True)

    @staticmethod
    def deadline(current: State | None) -> Decision[State] | None:
        assert current is not None
        appointment = AppointmentId(UUID(current["appointment"]))
        command = ReleaseSlot(appointment=appointment, reason="deposit-not-received")
        return Decision(current, commands=[command], ended=True)


# ---------------------------------------------------------------- tables.py / repositories.py
metadata = MetaData()
appointments = Table(
    "sc_appointments",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("slot", String, nullable=False),
    Column("status", String, nullable=False),
    Column("confirm_before", UtcDateTime, nullable=True),
)


class Appointments(Repository[Appointment]):
    aggregate = Appointment
    table = appointments


# ---------------------------------------------------------------- schemas.py / routes.py
class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slot: str
    confirm_within_minutes: int


class HoldBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    slot: str


class AppointmentOut(BaseModel):
    id: UUID
    slot: str
    status: Status


class PendingOut(BaseModel):
    name: str
    due_at: datetime
    status: str
    attempts: int


class InstanceOut(BaseModel):
    key: str
    state: dict[str, Any]
    version: int
    ended: bool
    pending: list[PendingOut]


router = APIRouter(route_class=LoomRoute, tags=["Scheduling"])
PROCESSES: dict[str, type[ConfirmationDeadline] | type[DepositHold]] = {
    "deadline": ConfirmationDeadline,
    "deposit": DepositHold,
}


@router.post("/api/workflows/request_appointment", response_model=UUID)
async def request_appointment(body: RequestBody, service: Service = Depends(get_service)) -> UUID:
    async with service.transaction() as work:
        deadline = now() + timedelta(minutes=body.confirm_within_minutes)
        a = Appointment.request(body.slot, deadline)
        await Appointments(work).save(a)
    return a.id


@router.post("/api/workflows/hold_slot", response_model=UUID)
async def hold_slot(body: HoldBody, service: Service = Depends(get_service)) -> UUID:
    async with service.transaction() as work:
        a = Appointment.hold(body.slot)
        await Appointments(work).save(a)
    return a.id


@router.post("/api/appointments/{id}/confirm", status_code=204, responses=PROBLEM_RESPONSES)
async def confirm(id: UUID, service: Service = Depends(get_service)) -> None:
    async with service.transaction() as work:
        repo = Appointments(work)
        a = await repo.get_by_id(id)
        a.confirm()
        await repo.save(a)


@router.post("/api/payments/{id}/deposit", responses=PROBLEM_RESPONSES)
async def pay_deposit(id: UUID, service: Service = Depends(get_service)) -> dict[str, str]:
    """The deposit arrives: the DepositHold step runs in this request's unit of work, so a step
    that loses a race on the instance answers 409."""
    async with service.transaction() as work:
        outcome = await service.processes.run(DepositHold, id, DepositHold.paid, work=work)
    return {"outcome": outcome.value}


@router.get("/api/appointments/{id}", response_model=AppointmentOut, responses=PROBLEM_RESPONSES)
async def get_appointment(id: UUID, service: Service = Depends(get_service)) -> AppointmentOut:
    async with service.autocommit() as work:
        a = await Appointments(work).get_by_id(id)
    return AppointmentOut(id=a.id, slot=a.slot, status=a.status)


@router.get("/api/processes/{kind}/{key}", response_model=InstanceOut, responses=PROBLEM_RESPONSES)
async def get_instance(kind: str, key: str, service: Service = Depends(get_service)) -> Any:
    """The instance endpoint: its state and its pending timeouts."""
    from loom.runtime import NotFound

    process = PROCESSES.get(kind)
    found = None if process is None else await service.processes.get(process, key)
    if process is None or found is None:
        raise NotFound(kind, key)
    pending = await service.processes.pending(process, key)
    return InstanceOut(
        key=found.key,
        state=found.state,
        version=found.version,
        ended=found.ended,
        pending=[
            PendingOut(name=p.name, due_at=p.due_at, status=p.status, attempts=p.attempts)
            for p in pending
        ],
    )


# ---------------------------------------------------------------- reactions, timeouts, timers
async def deadline_on_requested(service: Service, e: AppointmentRequested) -> None:
    async with service.reaction() as work:
        step = partial(ConfirmationDeadline.requested, e)
        await service.processes.run(ConfirmationDeadline, e.appointment, step, work=work)


async def deadline_on_confirmed(service: Service, e: AppointmentConfirmed) -> None:
    async with service.reaction() as work:
        step = ConfirmationDeadline.confirmed
        await service.processes.run(ConfirmationDeadline, e.appointment, step, work=work)


async def deposit_on_held(service: Service, e: SlotHeld) -> None:
    async with service.reaction() as work:
        await service.processes.run(
            DepositHold, e.appointment, partial(DepositHold.held, e), work=work
        )


FAILING: set[str] = set()  # process names whose timeout handler raises (tests clear it)


async def deadline_timeout(service: Service, due: TimeoutDue, work: Work) -> None:
    if due.process in FAILING:
        raise RuntimeError("the calendar is down")
    await service.processes.timeout(
        ConfirmationDeadline, due, ConfirmationDeadline.timed_out, work=work
    )


async def deposit_timeout(service: Service, due: TimeoutDue, work: Work) -> None:
    await service.processes.timeout(DepositHold, due, DepositHold.deadline, work=work)


async def perform(service: Service, e: DomainEvent) -> None:
    """The handlers of the three commands."""
    async with service.reaction() as work:
        repo = Appointments(work)
        a = await repo.get_by_id(e.appointment)  # type: ignore[attr-defined]
        if isinstance(e, ExpireAppointment):
            a.expire()
        elif isinstance(e, ConfirmAppointment):
            a.confirm()
        else:
            a.release()
        await repo.save(a)


SWEPT: list[Tick] = []


async def sweep_overdue(tick: Tick, work: Work) -> None:
    """timer expireOverdue every 5m: expire the requested appointments whose deadline passed."""
    SWEPT.append(tick)
    repo = Appointments(work)
    overdue = await repo.find_all(
        appointments.c.status == Status.REQUESTED.value, appointments.c.confirm_before < now()
    )
    for a in overdue:
        a.expire()
        await repo.save(a)


def subscribe(service: Service, *, sweep: bool = False) -> None:
    ev = service.events
    ev.subscribe(
        AppointmentRequested,
        partial(deadline_on_requested, service),
        name="Scheduling.ConfirmationDeadline.requested",
    )
    ev.subscribe(
        AppointmentConfirmed,
        partial(deadline_on_confirmed, service),
        name="Scheduling.ConfirmationDeadline.confirmed",
    )
    ev.subscribe(SlotHeld, partial(deposit_on_held, service), name="Scheduling.DepositHold.held")
    for command in (ExpireAppointment, ConfirmAppointment, ReleaseSlot):
        ev.subscribe(command, partial(perform, service), name=f"{command.event_type}.perform")
    service.timeouts.register(
        ConfirmationDeadline.name,
        partial(deadline_timeout, service),
        max_attempts=3,
        backoff=Backoff(initial=timedelta(seconds=10)),
    )
    service.timeouts.register(DepositHold.name, partial(deposit_timeout, service))
    if sweep:
        service.recurring.register("Scheduling.expireOverdue", SWEEP_EVERY, sweep_overdue)


EVENT_TYPES = (
    AppointmentRequested,
    AppointmentConfirmed,
    SlotHeld,
    ExpireAppointment,
    ConfirmAppointment,
    ReleaseSlot,
)


def build_app(
    database_url: str,
    *,
    durable: bool = False,
    sweep: bool = False,
    scheduler: bool = False,
    **options: Any,
) -> FastAPI:
    """`durable`: the Scheduling events ride a channel (outbox + relay) instead of in-process
    dispatch; `sweep`: register the expireOverdue context timer. The scheduler loop is off by
    default: tests move time with `VirtualClock`."""
    channels = [Channel("scheduling", [e.event_type for e in EVENT_TYPES])] if durable else []
    return create_app(
        title="scheduling-sample",
        metadata=metadata,
        routers=[router],
        database_url=database_url,
        channels=channels,
        event_types=EVENT_TYPES,
        subscribe=partial(subscribe, sweep=sweep),
        relay=False,
        processes=True,
        scheduler=scheduler,
        **options,
    )
