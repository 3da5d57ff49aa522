"""PostgreSQL LISTEN for the relay and the scheduler: a dedicated raw asyncpg connection (a pooled
one would be handed to requests and lose the subscription) that wakes its owner on every
`pg_notify` committed by any replica on its channel (the relay's `loom_outbox`, the scheduler's
`loom_timers`). A dropped connection is logged and reopened with backoff; after every (re)connect
the owner is woken once, to catch up on what was committed while nobody listened."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import URL

from loom.runtime.messaging.outbox import NOTIFY_CHANNEL
from loom.runtime.values.logs import log_fact


class Listener:
    def __init__(
        self,
        url: URL,
        wake: Callable[[], None],
        check_every: float,
        *,
        channel: str = NOTIFY_CHANNEL,
        on_payload: Callable[[str], None] | None = None,
        error_fact: str = "relay_error",
    ) -> None:
        """`wake()` after each (re)connect, and on each notification unless `on_payload` is
        given: then `on_payload(payload)`."""
        self._connect_args: dict[str, Any] = url.translate_connect_args(username="user")
        self._wake = wake
        self._channel = channel
        self._on_payload = on_payload
        self._error_fact = error_fact
        self._check_every = check_every
        self._task: asyncio.Task[None] | None = None
        self._first_attempt = asyncio.Event()
        self._stopping = False
        self._connected = asyncio.Event()

    @property
    def listening(self) -> bool:
        return self._connected.is_set()

    async def wait_listening(self) -> None:
        await self._connected.wait()

    async def start(self) -> None:
        """Start listening; returns once the first connection attempt is over, so a commit made
        right after `start()` is heard."""
        self._task = asyncio.create_task(self._run(), name=f"loom-listen {self._channel}")
        await self._first_attempt.wait()

    async def stop(self) -> None:
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        failures = 0
        while not self._stopping:
            conn: Any = None
            try:
                # imported here: a service on SQLite never loads the PostgreSQL driver
                import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints

                conn = await asyncpg.connect(**self._connect_args)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _conn, lost=lost: lost.set())
                await conn.add_listener(self._channel, self._on_notify)
                failures = 0
                self._connected.set()
                self._first_attempt.set()
                self._wake()
                while not conn.is_closed():
                    try:  # the termination callback is the fast path, the check the safety net
                        await asyncio.wait_for(lost.wait(), timeout=self._check_every)
                    except TimeoutError:
                        continue
                log_fact(self._error_fact, logging.WARNING, {"error": "LISTEN connection lost"})
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - retried below; polling covers the gap
                failures += 1
                fields = {"attempt": failures, "error": f"LISTEN: {type(exc).__name__}: {exc}"}
                log_fact(self._error_fact, logging.WARNING, fields)
            finally:
                self._connected.clear()
                self._first_attempt.set()
                if conn is not None:
                    await _close(conn)
            await asyncio.sleep(min(0.05 * 2 ** min(failures, 7), 5.0))

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if self._on_payload is None:
            self._wake()
        else:
            self._on_payload(payload)


async def _close(conn: Any) -> None:
    try:
        await asyncio.wait_for(conn.close(), timeout=2)
    except Exception:  # noqa: BLE001 - a dead connection cannot close politely
        conn.terminate()
