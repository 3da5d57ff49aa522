"""Waiting for a topology of services (deployables connected by brokers) to be quiet.

    await settle_all([orders, inventory])   # ServiceClients or Services

returns once, over one whole pass, no service's relay delivered or published anything, no
broker consumer settled a message, and every consumer holds nothing and has seen the broker
empty for it: the chain of events across the deployables has run to its end. A retry scheduled
for later on a relay (a row's backoff) is not due, so it is not awaited; a broker consumer's
retry in place is in flight, so it is. When that does not happen within `timeout` seconds (a
broker down, a retry loop) it raises `TimeoutError` naming what is still busy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

from loom.runtime import Service
from loom.testing._service import ServiceClient

_POLL = 0.005


def _service(item: Service | ServiceClient) -> Service:
    return item.service if isinstance(item, ServiceClient) else item


def _progress(services: list[Service]) -> tuple[tuple[int, int], ...]:
    return tuple((s.relay.processed, s.consumers.handled) for s in services)


async def settle_all(items: Iterable[Service | ServiceClient], *, timeout: float = 10.0) -> None:
    """Until every service of `items` is quiet (see the module's docstring)."""
    services = [_service(i) for i in items]
    deadline = time.monotonic() + timeout
    while True:
        before = _progress(services)
        started = time.monotonic()
        for service in services:
            await service.settle()
        while not all(s.consumers.drained_since(started) for s in services):
            if time.monotonic() > deadline:
                busy = [
                    f"{loop.spec.name} (holding {loop.held})"
                    for s in services
                    for loop in s.consumers.loops
                    if loop.held or loop.last_empty < started
                ]
                raise TimeoutError(
                    f"the services did not settle within {timeout} s; still busy: "
                    + ", ".join(busy)
                )
            await asyncio.sleep(_POLL)
        if _progress(services) == before:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the services did not settle within {timeout} s")
