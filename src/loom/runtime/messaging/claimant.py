"""What the outbox relay and the scheduler share as background claimants of leased rows
(`storage.lease`): their `claimed_by` stamp, the pause after a failed round, how their loop stops, and
the unit of work their guarded statements run in (the context timers' compare-and-set claims run
in it too)."""

from __future__ import annotations

import asyncio
import os
import socket

from loom.runtime.messaging.listen import Listener
from loom.runtime.storage.hosts import UnitHost
from loom.runtime.storage.work import Work
from loom.runtime.values.ids import new_id


def claimant_name() -> str:
    """A `claimed_by` stamp unique to one relay or scheduler: host, process and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id().hex[-12:]}"


def failure_pause(failures: int, poll_interval: float) -> float:
    """Seconds a loop waits after `failures` failed rounds in a row: 0.1 s, doubling, up to the
    poll interval or 1 s, whichever is longer."""
    return float(min(0.05 * 2 ** min(failures, 10), max(poll_interval, 1.0)))


def guarded_work(host: UnitHost) -> Work:
    """A unit of work for statements that are each atomic and guarded on their own: autocommit on
    PostgreSQL (no BEGIN/COMMIT round trips); on SQLite the service's writer lock and
    `BEGIN IMMEDIATE`, like every writer of this process."""
    return Work(host, host.dialect == "sqlite", None)


async def stop_loop(
    task: asyncio.Task[None] | None, listener: Listener | None, timeout: float
) -> None:
    """Let `task` (a loop already told to stop) finish its round, cancelling it after `timeout`
    seconds, then close its LISTEN connection."""
    if task is not None:
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if listener is not None:
        await listener.stop()
