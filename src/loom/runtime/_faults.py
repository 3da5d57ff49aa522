"""Fault injection for end-to-end tests."""

from __future__ import annotations


class Faults:
    """`fail_save(n)` makes the n-th save (1-based, counted within the next unit of work that
    reaches it) raise `error` (default `RuntimeError("injected fault")`); `clear()` disarms."""

    __slots__ = ("_error", "_n", "armed")

    def __init__(self) -> None:
        self.armed = False
        self._n = 0
        self._error: BaseException | None = None

    def fail_save(self, n: int, error: BaseException | None = None) -> None:
        if n < 1:
            raise ValueError("n counts saves from 1")
        self._n, self._error, self.armed = n, error, True

    def clear(self) -> None:
        self.armed, self._n, self._error = False, 0, None

    def check_save(self, count: int) -> None:
        """Called by a unit of work before its `count`-th save."""
        if self.armed and count == self._n:
            error = self._error or RuntimeError("injected fault")
            self.clear()
            raise error
