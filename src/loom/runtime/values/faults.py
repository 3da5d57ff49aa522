"""Fault injection for end-to-end tests."""

from __future__ import annotations

import os
import signal
from typing import Literal

RelayCrashPoint = Literal["claim", "deliver", "publish"]
ConsumerCrashPoint = Literal["commit"]


class Faults:
    """`fail_save(n)` makes the n-th save (1-based, counted within the next unit of work that
    reaches it) raise `error` (default `RuntimeError("injected fault")`); `clear()` disarms.

    `crash_relay(after)` makes the relay's next round stop dead, as if the process died, right
    after it claims its rows ("claim": nothing delivered) or after it delivers them ("deliver":
    handlers ran and committed), or after it publishes them to their broker ("publish") — in
    every case without marking a row.

    `crash_consumer(after="commit")` makes the service's broker consumers stop dead, as if the
    process died, right after the next reaction a consumer ran committed and before its message
    is acked: the broker hands the message out again after its `ack_wait`.

    `lose_commit()` makes the next COMMIT of a unit of work that saved or deleted an aggregate
    go through in the database and then
    breaks the connection before the client side sees its answer: the driver connection is
    terminated, and the commit step fails with the error the driver raises on a dead
    connection, as when the network drops during COMMIT. The write is applied; the request
    cannot know it.

    `kill_after_commit(n)` kills the process (SIGKILL: no clean-up of any kind) right after the
    n-th commit that a request's unit of work makes durable: an autocommit save, a save's short
    transaction with its outbox rows, a transaction's COMMIT, emitted events committed on their
    own. Reactions, the relay and the scheduler do not count. Each boundary of a body is then a
    place a test can crash it, and count after a restart what the crash separated."""

    __slots__ = (
        "_error",
        "_kill_at",
        "_n",
        "armed",
        "commit_lost",
        "consumer_crash",
        "relay_crash",
    )

    def __init__(self) -> None:
        self.armed = False
        self._n = 0
        self._error: BaseException | None = None
        self.relay_crash: RelayCrashPoint | None = None
        self.consumer_crash: ConsumerCrashPoint | None = None
        self.commit_lost = False
        self._kill_at = 0

    def fail_save(self, n: int, error: BaseException | None = None) -> None:
        if n < 1:
            raise ValueError("n counts saves from 1")
        self._n, self._error, self.armed = n, error, True

    def crash_relay(self, after: RelayCrashPoint) -> None:
        if after not in ("claim", "deliver", "publish"):
            raise ValueError("the relay crashes after 'claim', 'deliver' or 'publish'")
        self.relay_crash = after

    def crash_consumer(self, after: ConsumerCrashPoint) -> None:
        if after != "commit":
            raise ValueError("a consumer crashes after 'commit'")
        self.consumer_crash = after

    def kill_after_commit(self, n: int) -> None:
        if n < 1:
            raise ValueError("n counts commits from 1")
        self._kill_at = n

    def committed(self, request: bool) -> None:
        """Called after each commit that wrote something; `request`: of a request's unit of work."""
        if self._kill_at and request:
            self._kill_at -= 1
            if not self._kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    def lose_commit(self) -> None:
        self.commit_lost = True

    def take_lost_commit(self) -> bool:
        """Called by a unit of work as it commits: whether this commit is the one to lose."""
        lost, self.commit_lost = self.commit_lost, False
        return lost

    def clear(self) -> None:
        self.armed, self._n, self._error = False, 0, None
        self.relay_crash = None
        self.consumer_crash = None
        self.commit_lost = False
        self._kill_at = 0

    def check_save(self, count: int) -> None:
        """Called by a unit of work before its `count`-th save."""
        if self.armed and count == self._n:
            error = self._error or RuntimeError("injected fault")
            self.armed, self._n, self._error = False, 0, None
            raise error
