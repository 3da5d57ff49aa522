"""SQLAlchemy's asyncio bridge, with its greenlets kept for the next call.

SQLAlchemy runs every awaited call of its asyncio API (connect, begin, execute, commit, close) as
sync code in a greenlet of its own (`sqlalchemy.util.concurrency.greenlet_spawn`): a new greenlet
each time, about six for one unit of work. A new greenlet's Python frames need a stack of their
own, which CPython maps fresh from the kernel (a 16 KiB `mmap`, touched, then `munmap`ped when the
greenlet ends). On the virtual machines we measure on, those six mappings, their page faults and
the TLB flushes of their unmapping cost a broker consumer about half of its system time an event
(docs/benchmarks.md, "Broker path").

`greenlet_spawn` here keeps the protocol SQLAlchemy's `await_` expects of the greenlet it runs in
(`__sqlalchemy_greenlet_provider__`, the awaitables handed to its `parent`), and runs each call in
a worker greenlet that, once the call returns, waits for the next one instead of ending: its stack
is mapped once. Workers are kept per thread (a greenlet runs only in the thread that made it), at
most `KEPT` idle ones. `install` puts it in place of SQLAlchemy's in the modules of its asyncio
API, once per process.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from greenlet import getcurrent, greenlet  # type: ignore[import-untyped]  # no type hints
from sqlalchemy import exc

KEPT = 64  # idle workers kept per thread: as many as calls in flight at once, in practice


class _Outcome:
    """What a call ended with, handed from its worker to the caller. The caller takes it out of
    the box, so that the worker, which waits holding the box, keeps nothing of it alive."""

    __slots__ = ("failed", "value")

    def __init__(self, value: Any, failed: bool) -> None:
        self.value = value
        self.failed = failed


class _Worker(greenlet):  # type: ignore[misc]  # an untyped base
    """A greenlet that runs one call after another: `switch(fn, args, kwargs)` runs `fn` and
    hands its `_Outcome` to `parent`; any other object handed to `parent` meanwhile is an
    awaitable from SQLAlchemy's `await_`."""

    __sqlalchemy_greenlet_provider__ = True

    def __init__(self) -> None:
        super().__init__(self._serve)

    def _serve(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Any) -> None:
        while True:
            try:
                outcome = _Outcome(fn(*args, **kwargs), False)
            except BaseException as error:  # noqa: BLE001 - handed to the caller, who raises it
                outcome = _Outcome(error, True)
            del fn, args, kwargs
            fn, args, kwargs = self.parent.switch(outcome)


_local = threading.local()


def _idle() -> list[_Worker]:
    try:
        idle: list[_Worker] = _local.idle
    except AttributeError:
        idle = _local.idle = []
    return idle


async def greenlet_spawn(
    fn: Callable[..., Any], *args: Any, _require_await: bool = False, **kwargs: Any
) -> Any:
    """`sqlalchemy.util.concurrency.greenlet_spawn`: run the sync `fn` in a greenlet, awaiting
    each awaitable it hands out through `await_`, and answer what it returns (or raise what it
    raised), in the caller's context (its context variables)."""
    idle = _idle()
    worker = idle.pop() if idle else _Worker()
    driver = getcurrent()
    worker.parent = driver
    worker.gr_context = driver.gr_context
    switched = False
    result = worker.switch(fn, args, kwargs)
    while type(result) is not _Outcome:
        switched = True
        try:
            value = await result
        except BaseException:  # noqa: BLE001 - into the call, which may handle it (a rollback)
            result = worker.throw(*sys.exc_info())
        else:
            result = worker.switch(value)
    value, failed = result.value, result.failed
    result.value = None
    if len(idle) < KEPT:
        worker.gr_context = None  # the caller's context variables are not kept alive either
        idle.append(worker)
    if failed:
        raise value
    if _require_await and not switched:
        raise exc.AwaitRequired(
            "The current operation required an async execution but none was detected. This "
            "will usually happen when using a non compatible DBAPI driver. Please ensure that "
            "an async DBAPI is used."
        )
    return value


_installed = False


def install() -> None:
    """Use `greenlet_spawn` for SQLAlchemy's asyncio API in this process (once; idempotent)."""
    global _installed
    if _installed:
        return
    import sqlalchemy.ext.asyncio.engine as engine
    import sqlalchemy.ext.asyncio.result as result
    import sqlalchemy.ext.asyncio.session as session

    for module in (engine, result, session):
        module.greenlet_spawn = greenlet_spawn  # type: ignore[attr-defined]
    _installed = True
