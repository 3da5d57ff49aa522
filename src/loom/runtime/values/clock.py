"""The runtime clock: `now()` reads it; tests replace it.

from loom.runtime import clock
with clock.frozen(datetime(2030, 1, 1, tzinfo=UTC)):
    ...
clock.set_clock(lambda: ...); clock.reset_clock()
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

__all__ = [
    "Clock",
    "current_clock",
    "frozen",
    "now",
    "reset_clock",
    "set_clock",
    "system_clock",
    "use_clock",
]

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


_clock: Clock = system_clock


def now() -> datetime:
    """The current time, timezone-aware UTC, from the installed clock."""
    value = _clock()
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value if value.tzinfo is UTC else value.astimezone(UTC)


def set_clock(clock: Clock) -> None:
    """Install `clock` (a zero-argument callable returning a datetime) process-wide."""
    global _clock
    _clock = clock


def current_clock() -> Clock:
    """The installed clock (the system's unless a test installed another)."""
    return _clock


def reset_clock() -> None:
    set_clock(system_clock)


@contextmanager
def use_clock(clock: Clock) -> Iterator[None]:
    """Install `clock` for the duration of the block, then restore the previous one."""
    global _clock
    previous = _clock
    _clock = clock
    try:
        yield
    finally:
        _clock = previous


@contextmanager
def frozen(at: datetime) -> Iterator[None]:
    """Freeze `now()` at `at` for the block."""
    with use_clock(lambda: at):
        yield
