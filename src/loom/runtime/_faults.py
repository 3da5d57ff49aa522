"""Fault injection for end-to-end tests."""

from __future__ import annotations

from typing import Literal

RelayCrashPoint = Literal["claim", "deliver"]


class Faults:
    """`fail_save(n)` makes the n-th save (1-based, counted within the next unit of work that
    reaches it) raise `error` (default `RuntimeError("injected fault")`); `clear()` disarms.

    `crash_relay(after)` makes the relay's next round stop dead, as if the process died, right
    after it claims its rows ("claim": nothing delivered) or after it delivers them ("deliver":
    handlers ran and committed) — in both cases without marking a row."""

    __slots__ = ("_error", "_n", "armed", "relay_crash")

    def __init__(self) -> None:
        self.armed = False
        self._n = 0
        self._error: BaseException | None = None
        self.relay_crash: RelayCrashPoint | None = None

    def fail_save(self, n: int, error: BaseException | None = None) -> None:
        if n < 1:
            raise ValueError("n counts saves from 1")
        self._n, self._error, self.armed = n, error, True

    def crash_relay(self, after: RelayCrashPoint) -> None:
        if after not in ("claim", "deliver"):
            raise ValueError("the relay crashes after 'claim' or after 'deliver'")
        self.relay_crash = after

    def clear(self) -> None:
        self.armed, self._n, self._error = False, 0, None
        self.relay_crash = None

    def check_save(self, count: int) -> None:
        """Called by a unit of work before its `count`-th save."""
        if self.armed and count == self._n:
            error = self._error or RuntimeError("injected fault")
            self.armed, self._n, self._error = False, 0, None
            raise error
