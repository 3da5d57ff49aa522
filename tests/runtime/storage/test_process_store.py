"""The process store contract: run by the SQL store on every backend, and by the in-memory store
(on SQLite, whose units of work it never touches). Each test works in units of work of a real
service, as the runner does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from loom.runtime import ConcurrencyConflict, Service
from loom.runtime.processes import (
    InMemoryProcessStore,
    Instance,
    ProcessStore,
    SqlProcessStore,
    Timeout,
)

from .conftest import Backend, SqliteBackend

NOW = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)


def instance(state: Any, *, key: str = "k-1", process: str = "P", ended: bool = False) -> Instance:
    return Instance(process, key, state, 1, 0, ended, NOW)


class StoreContract:
    """Every store answers these the same way."""

    @pytest.fixture
    def store(self) -> ProcessStore:
        raise NotImplementedError

    @pytest.fixture
    async def service(self, backend: Backend) -> Service:
        return await backend.service(processes=True)

    async def test_a_missing_instance_loads_as_none(self, store: Any, service: Service) -> None:
        async with service.transaction() as work:
            assert await store.load(work, "P", "nobody") is None

    async def test_save_inserts_then_updates_with_a_version(
        self, store: Any, service: Service
    ) -> None:
        async with service.transaction() as work:
            first = await store.save(work, instance({"n": 1, "tags": ["a", None]}), 0)
        assert first.version == 1
        async with service.transaction() as work:
            loaded = await store.load(work, "P", "k-1")
            assert loaded is not None
            assert (loaded.state, loaded.version, loaded.ended) == (
                {"n": 1, "tags": ["a", None]},
                1,
                False,
            )
            assert (loaded.state_version, loaded.updated_at) == (1, NOW)
            second = await store.save(work, instance({"n": 2}, ended=True), loaded.version)
        assert second.version == 2
        async with service.transaction() as work:
            again = await store.load(work, "P", "k-1")
        assert again is not None and (again.state, again.version, again.ended) == (
            {"n": 2},
            2,
            True,
        )

    async def test_a_stale_version_is_a_conflict(self, store: Any, service: Service) -> None:
        async with service.transaction() as work:
            await store.save(work, instance({"n": 1}), 0)
            await store.save(work, instance({"n": 2}), 1)
        for stale in (0, 1, 5):
            with pytest.raises(ConcurrencyConflict) as raised:
                async with service.transaction() as work:
                    await store.save(work, instance({"n": 3}), stale)
            assert raised.value.aggregate == "process P"
        async with service.transaction() as work:
            kept = await store.load(work, "P", "k-1")
        assert kept is not None and (kept.state, kept.version) == ({"n": 2}, 2)

    async def test_state_must_be_plain_json(self, store: Any, service: Service) -> None:
        for bad in ({"at": NOW}, {"x": float("nan")}, {"amount": Decimal("1.50")}):
            with pytest.raises((TypeError, ValueError)):
                async with service.transaction() as work:
                    await store.save(work, instance(bad), 0)
        async with service.transaction() as work:
            assert await store.load(work, "P", "k-1") is None

    async def test_arm_replace_disarm(self, store: Any, service: Service) -> None:
        async with service.transaction() as work:
            first = await store.arm(
                work, "P", "k-1", Timeout("deadline", after=timedelta(minutes=15)), NOW
            )
            await store.arm(
                work, "P", "k-1", Timeout("reminder", at=NOW + timedelta(minutes=5)), NOW
            )
            await store.arm(work, "P", "k-2", Timeout("deadline", at=NOW), NOW)
        async with service.transaction() as work:
            pending = await store.pending(work, "P", "k-1")
            assert [(p.name, p.due_at, p.status, p.attempts) for p in pending] == [
                ("reminder", NOW + timedelta(minutes=5), "armed", 0),
                ("deadline", NOW + timedelta(minutes=15), "armed", 0),
            ]
            assert await store.armed(work, "P", "k-1", "deadline") == first
            # arming a name again replaces the job
            second = await store.arm(
                work, "P", "k-1", Timeout("deadline", after=timedelta(hours=1)), NOW
            )
            assert second != first
            assert await store.armed(work, "P", "k-1", "deadline") == second
            names = [(p.name, p.job_id) for p in await store.pending(work, "P", "k-1")]
            assert names == [("reminder", pending[0].job_id), ("deadline", second)]
            assert await store.disarm(work, "P", "k-1", "reminder") == 1
            assert await store.disarm(work, "P", "k-1", "reminder") == 0
            assert await store.armed(work, "P", "k-1", "reminder") is None
            assert await store.disarm_all(work, "P", "k-1") == 1
            assert await store.pending(work, "P", "k-1") == []
            # another instance's timers are untouched
            assert [p.name for p in await store.pending(work, "P", "k-2")] == ["deadline"]

    async def test_apply_saves_disarms_and_arms_as_one_write(
        self, store: Any, service: Service
    ) -> None:
        later = NOW + timedelta(minutes=1)
        deadline = Timeout("deadline", after=timedelta(minutes=15))
        async with service.transaction() as work:
            first = await store.apply(
                work, instance({"n": 1}), 0, arm=[deadline, Timeout("remind", at=later)]
            )
        assert first.version == 1
        async with service.transaction() as work:
            before = {p.name: p.job_id for p in await store.pending(work, "P", "k-1")}
            # cancel one, re-arm the other (a name both cancelled and armed ends up armed)
            second = await store.apply(
                work,
                instance({"n": 2}),
                1,
                cancel=["remind", "deadline", "never-armed"],
                arm=[Timeout("deadline", at=later)],
            )
            assert second.version == 2
            (rearmed,) = await store.pending(work, "P", "k-1")
        assert (rearmed.name, rearmed.due_at) == ("deadline", later)
        assert rearmed.job_id != before["deadline"]

        # a lost race writes nothing: neither the state nor the timers
        with pytest.raises(ConcurrencyConflict):
            async with service.transaction() as work:
                await store.apply(
                    work, instance({"n": 9}), 1, cancel=["deadline"], arm=[Timeout("x", at=NOW)]
                )
        with pytest.raises(ConcurrencyConflict):
            async with service.transaction() as work:
                await store.apply(work, instance({"n": 9}), 0, arm=[Timeout("y", at=NOW)])
        async with service.transaction() as work:
            kept = await store.load(work, "P", "k-1")
            assert kept is not None and (kept.state, kept.version) == ({"n": 2}, 2)
            assert [(p.name, p.job_id) for p in await store.pending(work, "P", "k-1")] == [
                ("deadline", rearmed.job_id)
            ]
            # ending clears every timeout of the instance
            ended = await store.apply(work, instance({"n": 3}, ended=True), 2, clear=True)
            assert ended.ended and await store.pending(work, "P", "k-1") == []

    async def test_list_by_process(self, store: Any, service: Service) -> None:
        async with service.transaction() as work:
            await store.save(work, instance({"n": 1}, process="B", key="2"), 0)
            await store.save(work, instance({"n": 2}, process="A", key="9"), 0)
            await store.save(work, instance({"n": 3}, process="B", key="1"), 0)
        async with service.transaction() as work:
            every = [(i.process, i.key, i.state) for i in await store.list(work)]
            only_b = [(i.process, i.key) for i in await store.list(work, "B")]
        assert every == [("A", "9", {"n": 2}), ("B", "1", {"n": 3}), ("B", "2", {"n": 1})]
        assert only_b == [("B", "1"), ("B", "2")]


class TestInMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> ProcessStore:
        return InMemoryProcessStore()

    @pytest.fixture
    async def backend(self, tmp_path: Path) -> AsyncIterator[Backend]:
        made = SqliteBackend(f"sqlite+aiosqlite:///{tmp_path / 'units.db'}")
        yield made  # the units of work it is handed never touch the database
        await made.close()

    async def test_due_lists_what_a_test_delivers(self, service: Service) -> None:
        store = InMemoryProcessStore()
        async with service.transaction() as work:
            await store.arm(work, "P", "k", Timeout("late", at=NOW + timedelta(minutes=2)), NOW)
            await store.arm(work, "P", "k", Timeout("soon", at=NOW + timedelta(minutes=1)), NOW)
        assert store.due(NOW) == []
        due = store.due(NOW + timedelta(minutes=5))
        assert [(p, k, t.name) for p, k, t in due] == [("P", "k", "soon"), ("P", "k", "late")]


class TestSqlStore(StoreContract):
    @pytest.fixture
    def store(self, service: Service) -> ProcessStore:
        return SqlProcessStore(service)

    async def test_a_rolled_back_unit_of_work_leaves_instances_and_timers_as_they_were(
        self, store: Any, service: Service
    ) -> None:
        async with service.transaction() as work:
            await store.save(work, instance({"n": 1}), 0)
            job = await store.arm(work, "P", "k-1", Timeout("deadline", at=NOW), NOW)
        with pytest.raises(RuntimeError):
            async with service.transaction() as work:
                await store.save(work, instance({"n": 2}), 1)
                await store.disarm(work, "P", "k-1", "deadline")
                await store.arm(work, "P", "k-1", Timeout("other", at=NOW), NOW)
                raise RuntimeError("the step failed after its writes")
        async with service.transaction() as work:
            kept = await store.load(work, "P", "k-1")
            assert kept is not None and (kept.state, kept.version) == ({"n": 1}, 1)
            assert [(p.name, p.job_id) for p in await store.pending(work, "P", "k-1")] == [
                ("deadline", job)
            ]


@pytest.mark.parametrize(
    "shape",
    [(True, 0, 1, False, True, 1), (False, 2, 0, False, False, 0), (False, 0, 3, True, True, 4)],
    ids=["first-step", "cancel-two", "end-and-rearm"],
)
def test_the_postgres_step_statement_is_built_once_and_compiled_once(
    shape: tuple[bool, int, int, bool, bool, int],
) -> None:
    """Kept per shape, with a cache key: SQLAlchemy compiles it once per engine (a statement
    without one, such as a multi-row VALUES, would be compiled at every step)."""
    from loom.runtime.processes.sql import _step_statement

    stmt = _step_statement(*shape)
    assert _step_statement(*shape) is stmt
    assert stmt._generate_cache_key() is not None
