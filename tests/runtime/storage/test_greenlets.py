"""SQLAlchemy's asyncio bridge with kept greenlets (runtime/storage/greenlets.py): each call answers
or raises as SQLAlchemy's own `greenlet_spawn` does, in the caller's context, and runs in a worker
greenlet kept for the next call rather than a new one (whose stack the kernel maps afresh)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from typing import Any

import pytest
from greenlet import getcurrent  # type: ignore[import-untyped]
from sqlalchemy import event, text
from sqlalchemy.exc import AwaitRequired
from sqlalchemy.util.concurrency import await_

from loom.runtime.storage import greenlets
from loom.runtime.storage.engine import create_engine
from loom.runtime.storage.greenlets import KEPT, greenlet_spawn

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


def _awaiting(value: Any, delay: float = 0.0) -> tuple[Any, Any]:
    """A sync call that awaits through SQLAlchemy's `await_`: its answer and its greenlet."""
    return await_(asyncio.sleep(delay, result=value)), getcurrent()


async def test_a_call_answers_what_it_returns_in_a_greenlet_kept_for_the_next() -> None:
    first, worker = await greenlet_spawn(_awaiting, "a")
    second, again = await greenlet_spawn(_awaiting, "b")
    assert (first, second) == ("a", "b")
    assert again is worker  # the same greenlet: its stack mapped once
    assert worker is not getcurrent()


async def test_an_error_of_the_call_is_raised_and_its_worker_serves_the_next() -> None:
    def refuse() -> None:
        await_(asyncio.sleep(0))
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await greenlet_spawn(refuse)
    assert (await greenlet_spawn(_awaiting, 1))[0] == 1


async def test_a_cancelled_wait_is_thrown_into_the_call_which_may_handle_it() -> None:
    seen: list[str] = []

    def waits() -> None:
        try:
            await_(asyncio.sleep(30))
        except asyncio.CancelledError:
            seen.append("cancelled")
            await_(asyncio.sleep(0))  # as a rollback on cancel awaits
            raise

    task = asyncio.ensure_future(greenlet_spawn(waits))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]
    assert (await greenlet_spawn(_awaiting, "after"))[0] == "after"


async def test_concurrent_calls_each_run_in_a_worker_of_their_own() -> None:
    answers = await asyncio.gather(*(greenlet_spawn(_awaiting, n, 0.01) for n in range(20)))
    assert [value for value, _ in answers] == list(range(20))
    assert len({id(worker) for _, worker in answers}) == 20
    assert len(greenlets._idle()) <= KEPT


async def test_the_call_sees_its_callers_context_variables_and_the_worker_keeps_none() -> None:
    def read() -> str:
        await_(asyncio.sleep(0.01))
        return request_id.get()

    async def caller(name: str) -> str:
        request_id.set(name)
        return str(await greenlet_spawn(read))

    assert list(await asyncio.gather(caller("one"), caller("two"))) == ["one", "two"]
    assert all(worker.gr_context is None for worker in greenlets._idle())


async def test_the_answer_is_not_kept_alive_by_the_waiting_worker() -> None:
    class Answer:
        pass

    answer = await greenlet_spawn(Answer)
    gone = weakref.ref(answer)
    del answer
    assert gone() is None


async def test_a_call_that_must_await_and_does_not_is_refused_as_sqlalchemy_refuses_it() -> None:
    with pytest.raises(AwaitRequired):
        await greenlet_spawn(lambda: 1, _require_await=True)
    assert await greenlet_spawn(lambda: 2) == 2


def test_each_thread_keeps_workers_of_its_own() -> None:
    """A greenlet runs only in the thread that made it: a loop in another thread makes its own."""
    answers: list[Any] = []

    async def twice() -> None:
        for value in ("x", "y"):
            answers.append(await greenlet_spawn(_awaiting, value))

    asyncio.run(twice())
    thread = threading.Thread(target=lambda: asyncio.run(twice()))
    thread.start()
    thread.join()
    assert [value for value, _ in answers] == ["x", "y", "x", "y"]
    assert answers[0][1] is answers[1][1] and answers[2][1] is answers[3][1]
    assert answers[0][1] is not answers[2][1]


async def test_a_unit_of_work_on_a_real_database_runs_its_statements_in_kept_greenlets(
    database_url: str,
) -> None:
    """Through SQLAlchemy's asyncio API, as the runtime calls it: 40 transactions of three
    statements run in one greenlet (SQLAlchemy alone makes one per call: over 200), and every
    statement answers as it should."""
    engine = create_engine(database_url)
    seen: list[Any] = []  # the greenlets themselves, kept alive: no two share an id

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _where(*_: Any) -> None:
        seen.append(getcurrent())

    try:
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE counted (id INTEGER PRIMARY KEY, n INTEGER)"))
        for n in range(40):
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO counted VALUES (:n, :n)"), {"n": n})
                await conn.execute(text("UPDATE counted SET n = n + 1 WHERE id = :n"), {"n": n})
                assert (await conn.execute(text("SELECT count(*) FROM counted"))).scalar() == n + 1
        async with engine.connect() as conn:
            total = (await conn.execute(text("SELECT sum(n) FROM counted"))).scalar()
        assert total == sum(range(1, 41))
        assert len(seen) > 40 * 3  # every statement seen (and SQLite's BEGIN and PRAGMAs)
        assert len({id(worker) for worker in seen}) <= 2  # the set-up's and the rest's, at most
    finally:
        await engine.dispose()
