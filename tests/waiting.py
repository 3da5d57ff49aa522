"""Waiting for a condition instead of sleeping for a fixed time: the suite's one polling helper.

A fixed sleep is either too short on a loaded machine (a flaky test) or too long everywhere (a slow
one). These poll the condition with a deadline, and fail naming what never happened.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.05
) -> T:
    """Call `predicate` until it answers something truthy, and answer that; fail with `what` if it
    has not within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = predicate()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout}s, still not: {what} (last: {answer!r})")
        time.sleep(interval)


# Two signatures so that a coroutine function's awaited answer is what the wait answers: one
# `Callable[[], T | Awaitable[T]]` leaves mypy unable to solve T for a coroutine function.
@overload
async def until(
    predicate: Callable[[], Awaitable[T | None]],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
) -> T: ...
@overload
async def until(
    predicate: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.05
) -> T: ...
async def until(
    predicate: Callable[[], Any], *, timeout: float, what: str, interval: float = 0.05
) -> Any:
    """`wait_until` for a test on the event loop: `predicate` may be a coroutine function, and the
    loop keeps running between calls."""
    deadline = time.monotonic() + timeout
    while True:
        answer = predicate()
        if inspect.isawaitable(answer):
            answer = await answer
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout}s, still not: {what} (last: {answer!r})")
        await asyncio.sleep(interval)
