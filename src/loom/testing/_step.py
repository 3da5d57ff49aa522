"""given / when / then for a workflow of a model (docs/processes.md, "A workflow of the model"):
its real generated step, run without HTTP and without a database to set up.

    given_process(deadline, {"appointment": a.id}, aggregates=[a]) \\
        .when(deadline.timeout("deadline")) \\
        .then_calls(["Appointment.expire"]).then_ended()

`when` runs the generated reaction (`create(e: X)` / `on(e: X)`) or `on timeout` as the service
runs it — as the system principal, in one unit of work — on a service of the model over an
in-memory SQLite database made for that one step, holding what the `given` says: the instance
(its state; for an `eventSourced` workflow, the events so far folded by its `apply` clauses), and
the aggregates the step finds. What the step did is read back from its environment: the instance
it saved, the timeouts it armed and cancelled (a recording process store), the events its unit of
work emitted (the service's event bus; no other reaction runs), and the aggregate operations it
called (`_model.Call`). A step that saved no instance ignored what happened (`then_ignored`); one
that raised raises from `when`.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, Self, TypeVar
from uuid import UUID

from loom.codegen.python.bodies import apply_function
from loom.model import naming
from loom.model.deployables import consumer_name
from loom.model.reserved import ENDED, STARTED_AT
from loom.runtime import (
    SYSTEM,
    AggregateRoot,
    DomainEvent,
    EventBus,
    Repository,
    Service,
    Work,
    instance_version,
    now,
    use_principal,
)
from loom.runtime.processes import ProcessHost, SqlProcessStore, Timeout, TimeoutDue
from loom.testing._model import (
    Call,
    DueTimeout,
    ModelUsageError,
    Workflow,
    build,
    hint,
    recording_calls,
)
from loom.testing._then import Then, match_each, match_value

T = TypeVar("T")
State = dict[str, Any]


@dataclass(frozen=True)
class Stepped:
    """What a modelled step did: the instance's state after it (its declared fields, by the model's
    names), the events its unit of work emitted (`commands`, in the order they left: those of the
    aggregates it saved, then its own `emit`s), the timeouts it armed (`schedule`) and cancelled
    (`cancel`), whether it ended the instance (`complete`), and the aggregate calls it made."""

    state: State
    commands: tuple[DomainEvent, ...]
    timeouts: tuple[Timeout, ...]
    cancel: tuple[str, ...]
    ended: bool
    calls: tuple[Call, ...]


def given_workflow(
    workflow: Workflow,
    state: Mapping[str, Any] | None,
    events: Sequence[DomainEvent],
    aggregates: Sequence[AggregateRoot],
    tenant: str | None,
) -> GivenStep:
    """The instance a step starts from (None: none yet), checked against the model."""
    wf = workflow.ir
    if workflow.context.tenanted and not tenant:
        raise ModelUsageError(
            f"workflow {workflow.name} is in a tenanted context: name the tenant its step runs "
            "for (tenant='…')"
        )
    if tenant and not workflow.context.tenanted:
        raise ModelUsageError(f"workflow {workflow.name} is not in a tenanted context: no tenant")
    if wf.correlation is None:
        raise ModelUsageError(
            f"workflow {workflow.name} keeps no instance (no id-shaped state field): "
            "given_process tests the steps of a workflow with a correlation key"
        )
    if events and not wf.event_sourced:
        raise ModelUsageError(
            f"workflow {workflow.name} is not eventSourced: give its state, not events"
        )
    if state is not None and not isinstance(state, Mapping):
        raise ModelUsageError(
            f"the state of {workflow.name} is a dict of its fields by the model's names, "
            f"not {state!r}"
        )
    instance = None
    if state is not None or events:
        if state is None or wf.correlation not in state:
            raise ModelUsageError(
                f"the given instance of {workflow.name} needs its key: "
                f"state={{{wf.correlation!r}: …}}"
            )
        instance = build(workflow.state_class, f"the state of {workflow.name}", wf.state, state)
        if wf.process:  # its episode started, as a starter's `bind` stamps it
            setattr(instance, naming.ident(STARTED_AT), now())
        for event in events:
            _fold(workflow, instance, event)
    for aggregate in aggregates:
        if not _repository(workflow, aggregate):
            raise ModelUsageError(
                f"{aggregate!r} is not an aggregate of this model: "
                "make it with model.aggregate(name, …)"
            )
    return GivenStep(workflow, instance, tuple(aggregates), tenant)


def _fold(workflow: Workflow, instance: Any, event: object) -> None:
    """Apply one of the events so far, by the workflow's own generated `apply` clause."""
    context = workflow.context.name
    applies = {
        a.event if "." in a.event else f"{context}.{a.event}": a for a in workflow.ir.applies
    }
    name = getattr(type(event), "event_type", repr(event))
    apply = applies.get(name) if isinstance(event, DomainEvent) else None
    if apply is None:
        raise ModelUsageError(
            f"workflow {workflow.name} has no apply(e: {name}){hint(name, list(applies))}; "
            f"it applies: {', '.join(applies) or 'no event'}"
        )
    functions = workflow.model.module(workflow.context, "workflows")
    getattr(functions, apply_function(workflow.ir, apply))(instance, event)


def _repository(workflow: Workflow, aggregate: object) -> type[Repository[Any]] | None:
    """The generated repository of the aggregate's class (None: not one of this model's)."""
    for context in workflow.model.ir.contexts:
        repositories = workflow.model.module(context, "repositories")
        for value in vars(repositories).values():
            if (
                isinstance(value, type)
                and issubclass(value, Repository)
                and getattr(value, "aggregate", None) is type(aggregate)
            ):
                return value
    return None


class GivenStep:
    def __init__(
        self,
        workflow: Workflow,
        instance: Any,
        aggregates: tuple[AggregateRoot, ...],
        tenant: str | None,
    ) -> None:
        self.workflow = workflow
        self.instance = instance
        self.aggregates = aggregates
        self.tenant = tenant

    def when(self, what: DomainEvent | DueTimeout) -> ThenStep:
        """Run the step that reacts to the event `what` (its `create(e: X)` or `on(e: X)`), or the
        `on timeout` that `workflow.timeout(name)` names, once, on the given instance."""
        stimulus = self._stimulus(what)
        return ThenStep(self.workflow, _run_sync(lambda: _run(self, stimulus)))

    def _stimulus(self, what: object) -> _Stimulus:
        workflow = self.workflow
        if isinstance(what, DueTimeout):
            if what.workflow != workflow.name:
                raise ModelUsageError(
                    f"{what.name!r} is a timeout of {what.workflow}, not of {workflow.name}"
                )
            if self.instance is None:
                raise ModelUsageError(
                    f"a timeout fires on an instance: give the state of {workflow.name} "
                    f"(its key {workflow.ir.correlation!r})"
                )
            key = str(getattr(self.instance, naming.ident(workflow.ir.correlation or "")))
            return _Fire(workflow.name, key, what.name, self.tenant)
        if not isinstance(what, DomainEvent):
            raise ModelUsageError(
                f"when takes an event of the model or workflow.timeout(name), not {what!r}"
            )
        wanted = type(what).event_type
        for reaction in workflow.ir.reactions:
            if f"{reaction.event.context}.{reaction.event.name}" == wanted:
                name = consumer_name(workflow.context.name, workflow.ir.name, reaction)
                return _React(name, what)
        has = ", ".join(
            f"{r.kind}(e: {r.event.context}.{r.event.name})" for r in workflow.ir.reactions
        )
        raise ModelUsageError(
            f"workflow {workflow.name} does not react to {wanted}; its reactions: {has or 'none'}"
        )


Step = Callable[[], Awaitable[None]]


class _Stimulus(Protocol):
    async def prepare(self, service: Service, subscribed: EventBus) -> Step:
        """Set the step up (nothing it does is recorded) and answer it; `subscribed` is the bus
        the generated code subscribed its reactions to."""


@dataclass(frozen=True)
class _React:
    """An event, delivered to the reaction subscribed under `consumer`."""

    consumer: str
    event: DomainEvent

    async def prepare(self, service: Service, subscribed: EventBus) -> Step:
        subscriptions = subscribed.handlers_for(type(self.event))
        handler = next(s.handler for s in subscriptions if s.name == self.consumer)
        event = self.event
        return lambda: handler(event)


@dataclass(frozen=True)
class _Fire:
    """The timeout `name` of the instance `key`, fired as the scheduler fires it: armed (due now),
    then its workflow's handler in a transaction of its own."""

    process: str
    key: str
    name: str
    tenant: str | None

    async def prepare(self, service: Service, subscribed: EventBus) -> Step:
        async with service.transaction() as work:
            at = now()
            job = await service.processes.store.arm(
                work, self.process, self.key, Timeout(self.name, at=at), at
            )
        registered = service.timeouts.get(self.process)
        assert registered is not None  # the generated code registers one per process workflow
        due = TimeoutDue(self.process, self.key, self.name, job, at, 1, str(job), self.tenant)

        async def fire() -> None:
            async with service.transaction() as work:
                await registered.handler(due, work)

        return fire


class _RecordingStore(SqlProcessStore):
    """The SQL process store, recording what a step arms and cancels while `on`."""

    def __init__(self, host: ProcessHost) -> None:
        super().__init__(host)
        self.on = False
        self.arming: list[Timeout] = []
        self.cancelled: list[str] = []

    async def arm(
        self, work: Work, process: str, key: str, timeout: Timeout, now: datetime
    ) -> UUID:
        if self.on:
            self.arming.append(timeout)
        return await super().arm(work, process, key, timeout, now)

    async def disarm(self, work: Work, process: str, key: str, name: str) -> int:
        if self.on:
            self.cancelled.append(name)
        return await super().disarm(work, process, key, name)


async def _run(given: GivenStep, stimulus: _Stimulus) -> Stepped | None:
    """The step, on a service of its own over an in-memory SQLite database."""
    model = given.workflow.model
    service = Service.from_url("sqlite://", model.metadata, processes=True)
    store = _RecordingStore(service)
    service.processes.store = store
    try:
        model.main.subscribe(service)
        # events are recorded, never delivered: no reaction but the step runs
        subscribed, recorder = service.events, _Recorder()
        service.events = recorder
        await service.create_schema()
        # the system principal, of the tenant in a tenanted context, as a reaction or a timeout
        with use_principal(dataclasses.replace(SYSTEM, tenant=given.tenant)):
            await _seed(service, given)
            step = await stimulus.prepare(service, subscribed)
            instances = given.workflow.instances_class
            before = await _versions(service, instances)
            recorder.emitted.clear()  # what the given aggregates had raised is not the step's
            with recording_calls() as calls:
                store.on = True
                try:
                    await step()
                finally:
                    store.on = False
            return await _decided(given.workflow, service, before, recorder.emitted, store, calls)
    finally:
        await service.dispose()


async def _seed(service: Service, given: GivenStep) -> None:
    """Store the given aggregates and instance (copies: the test's objects stay as they were)."""
    async with service.transaction() as work:
        for aggregate in given.aggregates:
            repository = _repository(given.workflow, aggregate)
            assert repository is not None  # checked by the given
            await repository(work).save(copy.deepcopy(aggregate))
        if given.instance is not None:
            await given.workflow.instances_class(work).save(copy.deepcopy(given.instance))


async def _instances(service: Service, instances: type[Any]) -> list[Any]:
    async with service.autocommit() as work:
        found: list[Any] = await instances(work).all()
        return found


async def _versions(service: Service, instances: type[Any]) -> dict[object, int]:
    key = naming.ident(instances.key)
    return {getattr(i, key): instance_version(i) for i in await _instances(service, instances)}


class _Recorder(EventBus):
    """An event bus that keeps what units of work dispatch, in order, and delivers nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.emitted: list[DomainEvent] = []

    async def dispatch(self, events: Iterable[DomainEvent]) -> None:
        self.emitted.extend(events)


async def _decided(
    workflow: Workflow,
    service: Service,
    before: Mapping[object, int],
    emitted: list[DomainEvent],
    store: _RecordingStore,
    calls: list[Call],
) -> Stepped | None:
    """What the step did to the instance it saved; None when it saved none (it ignored)."""
    instances = workflow.instances_class
    key = naming.ident(instances.key)
    saved = [
        i
        for i in await _instances(service, instances)
        if instance_version(i) != before.get(getattr(i, key), 0)
    ]
    if not saved:
        return None
    (instance,) = saved  # a step acts on one instance
    return Stepped(
        state={f.name: getattr(instance, naming.ident(f.name)) for f in workflow.ir.state},
        commands=tuple(emitted),
        timeouts=tuple(store.arming),
        cancel=tuple(store.cancelled),
        ended=bool(getattr(instance, naming.ident(ENDED), False)),
        calls=tuple(calls),
    )


def _run_sync(run: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a step to its end from a plain test, or from an async one (whose loop is busy: the step
    then runs on a loop of its own, on a thread, with the test's context)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        busy = False
    else:
        busy = True
    if not busy:  # run outside the `except`: what the step raises is not chained to this
        return asyncio.run(run())
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(context.run, asyncio.run, run()).result()


class ThenStep(Then[State]):
    """What a modelled step did (`decision`: a `Stepped`, None when it ignored what happened)."""

    def __init__(self, workflow: Workflow, stepped: Stepped | None) -> None:
        super().__init__(stepped)
        self.workflow = workflow
        self.stepped = stepped

    def then_state(self, expected: State) -> Self:
        """The instance's state after the step: every declared field, by the model's names."""
        declared = [f.name for f in self.workflow.ir.state]
        for name in expected:
            if name not in declared:
                raise ModelUsageError(
                    f"workflow {self.workflow.name} has no state field {name!r}"
                    f"{hint(name, declared)}; its state: {', '.join(declared)}"
                )
        return super().then_state(expected)

    def then_calls(self, expected: Sequence[Any]) -> Self:
        """The aggregate operations the step called (and aggregates it created), in order, one
        matcher per call: `"Aggregate.operation"`, a `("Aggregate.operation", {arguments that
        matter})` pair, a dict of the `Call` fields that matter, a `Call`, or a predicate."""
        self._decided("aggregate calls")
        assert self.stepped is not None
        calls = self.stepped.calls
        match_each("call", calls, expected, _match_call, [f"{c.name}({c.args})" for c in calls])
        return self


def _match_call(call: Call, matcher: Any) -> str | None:
    if isinstance(matcher, str):
        return None if call.name == matcher else f"expected {matcher}, the step called {call!r}"
    if isinstance(matcher, tuple) and len(matcher) == 2 and isinstance(matcher[0], str):
        name, args = matcher
        wrong = {k: call.args.get(k, "<missing>") for k, v in args.items() if call.args.get(k) != v}
        if call.name != name or wrong:
            return f"expected {name}({dict(args)}), the step called {call!r}"
        return None
    return match_value(call, matcher)
