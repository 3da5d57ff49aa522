"""The process runner on a real service (SQLite and PostgreSQL): arm, replace, cancel, fire only
while armed, ended instances ignore everything, a state of another version is refused, commands
leave after the commit, and two steps racing on one instance are settled by its version."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeGuard

import pytest
from sqlalchemy import MetaData

from loom.runtime import ConcurrencyConflict, DomainEvent, Service, clock
from loom.runtime.processes import (
    Decision,
    InMemoryProcessStore,
    Instance,
    Outcome,
    ProcessRunner,
    ProcessStateRefused,
    SqlProcessStore,
    Timeout,
    TimeoutDue,
)

from .processes_kit import lines

NOW = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
State = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Ping(DomainEvent):
    event_type: ClassVar[str] = "Test.Ping"
    n: int


class Counter:
    name: ClassVar[str] = "Test.Counter"
    version: ClassVar[int] = 1

    @staticmethod
    def is_state(value: object) -> TypeGuard[State]:
        return isinstance(value, dict) and isinstance(value.get("n"), int)


class CounterV2(Counter):
    version: ClassVar[int] = 2


def bump(
    *,
    arm: tuple[str, ...] = (),
    cancel: tuple[str, ...] = (),
    end: bool = False,
    ping: bool = False,
) -> Any:
    def step(current: State | None) -> Decision[State]:
        n = 0 if current is None else current["n"]
        timeouts = [Timeout(name, after=timedelta(minutes=10)) for name in arm]
        commands = [Ping(n=n + 1)] if ping else []
        return Decision({"n": n + 1}, commands, timeouts, cancel, end)

    return step


def never(current: State | None) -> Decision[State] | None:
    raise AssertionError("this step must not run")


def ignore(current: State | None) -> Decision[State] | None:
    return None


@pytest.fixture
async def service(database_url: str) -> AsyncIterator[Service]:
    with clock.frozen(NOW):
        service = Service.from_url(database_url, MetaData(), processes=True)
        await service.create_schema()
        yield service
        await service.dispose()


async def pending(runner: ProcessRunner, key: str = "k") -> list[tuple[str, Any]]:
    return [(p.name, p.job_id) for p in await runner.pending(Counter, key)]


def due(name: str, job_id: Any, key: str = "k") -> TimeoutDue:
    return TimeoutDue(Counter.name, key, name, job_id, NOW)


async def test_a_step_saves_state_and_arms_in_one_unit_of_work(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    runner = service.processes
    with caplog.at_level(logging.INFO, logger="loom.events"):
        assert await runner.run(Counter, "k", bump(arm=("deadline",))) is Outcome.DECIDED
    found = await runner.get(Counter, "k")
    assert found is not None
    assert (found.state, found.version, found.state_version, found.ended) == ({"n": 1}, 1, 1, False)
    (armed,) = await runner.pending(Counter, "k")
    assert (armed.name, armed.due_at, armed.status) == (
        "deadline",
        NOW + timedelta(minutes=10),
        "armed",
    )
    (line,) = lines(caplog, "process_decided")
    assert line["process"] == "Test.Counter" and line["key"] == "k"
    assert (line["version"], line["armed"], line["ended"]) == (1, ["deadline"], False)


async def test_rearming_replaces_and_only_the_armed_job_fires(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    runner = service.processes
    await runner.run(Counter, "k", bump(arm=("deadline",)))
    ((_, first),) = await pending(runner)
    await runner.run(Counter, "k", bump(arm=("deadline",)))
    ((_, second),) = await pending(runner)
    assert second != first
    with caplog.at_level(logging.INFO, logger="loom.events"):
        assert await runner.timeout(Counter, due("deadline", first), never) is Outcome.STALE
    (stale,) = lines(caplog, "timeout_stale")
    assert stale["job_id"] == str(first) and stale["timeout"] == "deadline"
    # the armed one fires; firing consumes it
    assert await runner.timeout(Counter, due("deadline", second), bump()) is Outcome.DECIDED
    assert await pending(runner) == []
    found = await runner.get(Counter, "k")
    assert found is not None and found.state == {"n": 3}
    # a timeout never fires twice
    assert await runner.timeout(Counter, due("deadline", second), never) is Outcome.STALE


async def test_a_timeout_step_may_arm_its_own_name_again(service: Service) -> None:
    runner = service.processes
    await runner.run(Counter, "k", bump(arm=("reminder",)))
    ((_, first),) = await pending(runner)
    assert (
        await runner.timeout(Counter, due("reminder", first), bump(arm=("reminder",)))
        is Outcome.DECIDED
    )
    ((name, again),) = await pending(runner)
    assert name == "reminder" and again != first


async def test_cancel_disarms(service: Service) -> None:
    runner = service.processes
    await runner.run(Counter, "k", bump(arm=("deadline", "reminder")))
    jobs = dict(await pending(runner))
    await runner.run(Counter, "k", bump(cancel=("deadline", "never-armed")))
    assert [name for name, _ in await pending(runner)] == ["reminder"]
    assert await runner.timeout(Counter, due("deadline", jobs["deadline"]), never) is Outcome.STALE


async def test_an_ended_instance_ignores_steps_and_timeouts(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    runner = service.processes
    await runner.run(Counter, "k", bump(arm=("deadline",)))
    ((_, job),) = await pending(runner)
    await runner.run(Counter, "k", bump(end=True))  # ends without cancelling: nothing stays armed
    assert await pending(runner) == []
    with caplog.at_level(logging.INFO, logger="loom.events"):
        assert await runner.run(Counter, "k", never) is Outcome.ENDED_IGNORED
        assert await runner.timeout(Counter, due("deadline", job), never) is Outcome.ENDED_IGNORED
    assert len(lines(caplog, "process_ignored_ended")) == 2
    found = await runner.get(Counter, "k")
    assert found is not None and (found.state, found.version, found.ended) == ({"n": 2}, 2, True)


async def test_an_ignoring_step_writes_nothing(service: Service) -> None:
    runner = service.processes
    assert await runner.run(Counter, "k", ignore) is Outcome.IGNORED
    assert await runner.get(Counter, "k") is None
    assert await runner.list() == []


async def test_a_state_of_another_version_is_refused_not_misread(service: Service) -> None:
    runner = service.processes
    await runner.run(Counter, "k", bump(arm=("deadline",)))
    with pytest.raises(ProcessStateRefused, match="saved by version 1, this is version 2"):
        await runner.run(CounterV2, "k", never)
    # a state its own version does not recognise is refused too
    store = runner.store
    assert isinstance(store, SqlProcessStore)  # the service's runner is on the SQL store
    async with service.transaction() as work:
        await store.save(work, Instance(Counter.name, "odd", {"m": 1}, 1, 0, False, NOW), 0)
    with pytest.raises(ProcessStateRefused, match=r"not one Test.Counter recognises"):
        await runner.run(Counter, "odd", never)
    # and a step may not decide one: nothing is written
    with pytest.raises(ProcessStateRefused, match="is_state does not recognise"):
        await runner.run(Counter, "k", lambda current: Decision({"n": "one"}, cancel=["deadline"]))
    found = await runner.get(Counter, "k")
    assert found is not None and (found.state, found.version) == ({"n": 1}, 1)
    assert [name for name, _ in await pending(runner)] == ["deadline"]


async def test_commands_leave_after_the_commit_only(service: Service) -> None:
    seen: list[int] = []

    async def handler(event: DomainEvent) -> None:
        assert isinstance(event, Ping)
        seen.append(event.n)

    service.events.subscribe(Ping, handler, name="Test.sink")
    runner = service.processes
    await runner.run(Counter, "k", bump(ping=True))
    assert seen == [1]
    with pytest.raises(RuntimeError):
        async with service.transaction() as work:
            await runner.run(Counter, "k", bump(ping=True, arm=("deadline",)), work=work)
            raise RuntimeError("the request failed after the step")
    assert seen == [1]
    found = await runner.get(Counter, "k")
    assert found is not None and found.state == {"n": 1} and await pending(runner) == []


async def test_two_steps_of_one_instance_queue_and_the_second_decides_on_the_first(
    service: Service,
) -> None:
    """The default path: on SQLite writers are serialised, on PostgreSQL the load locks the row."""
    runner = service.processes
    await runner.run(Counter, "k", bump())
    outcomes = await asyncio.gather(*(runner.run(Counter, "k", bump()) for _ in range(5)))
    assert outcomes == [Outcome.DECIDED] * 5
    found = await runner.get(Counter, "k")
    assert found is not None and (found.state, found.version) == ({"n": 6}, 6)


class Racing:
    """A store whose `load` waits until every racer has loaded: each step decides on the same
    version, as two replicas can."""

    def __init__(self, inner: Any, racers: int) -> None:
        self.inner = inner
        self.barrier = asyncio.Barrier(racers)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def load(self, work: Any, process: str, key: str) -> Any:
        found = await self.inner.load(work, process, key)
        await self.barrier.wait()
        return found


async def race(runner: ProcessRunner, key: str) -> list[Any]:
    results = await asyncio.gather(
        runner.run(Counter, key, bump(arm=("a",))),
        runner.run(Counter, key, bump(arm=("b",))),
        return_exceptions=True,
    )
    return sorted(results, key=lambda r: isinstance(r, Exception))


async def test_a_forced_race_in_memory_one_wins_the_other_conflicts(service: Service) -> None:
    store = InMemoryProcessStore()
    runner = ProcessRunner(service, Racing(store, 2))
    won, lost = await race(runner, "k")
    assert won is Outcome.DECIDED and isinstance(lost, ConcurrencyConflict)
    retry = ProcessRunner(service, store)
    assert await retry.run(Counter, "k", bump()) is Outcome.DECIDED  # retried from the new state
    found = await retry.get(Counter, "k")
    assert found is not None and found.state == {"n": 2} and len(await pending(retry)) == 1


@pytest.mark.postgres
async def test_a_forced_race_on_postgres_one_wins_the_other_conflicts(postgres_url: str) -> None:
    with clock.frozen(NOW):
        service = Service.from_url(postgres_url, MetaData(), processes=True)
        service.lock_reads = False  # reads take no row lock: the version check alone decides
        await service.create_schema()
        try:
            runner = ProcessRunner(service, Racing(SqlProcessStore(service), 2))
            # two first steps: both find no instance, both insert
            won, lost = await race(runner, "new")
            assert won is Outcome.DECIDED and isinstance(lost, ConcurrencyConflict)
            # the loser's timeout never existed: only the winner's is armed
            assert len(await service.processes.pending(Counter, "new")) == 1
            # two steps on version 1: both update WHERE version = 1
            won, lost = await race(runner, "new")
            assert won is Outcome.DECIDED and isinstance(lost, ConcurrencyConflict)
            found = await service.processes.get(Counter, "new")
            assert found is not None and (found.state, found.version) == ({"n": 2}, 2)
            # retried, the loser decides on the winner's state
            assert await service.processes.run(Counter, "new", bump()) is Outcome.DECIDED
            found = await service.processes.get(Counter, "new")
            assert found is not None and found.state == {"n": 3}
        finally:
            await service.dispose()
