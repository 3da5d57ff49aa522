"""What a unit of work needs of the service that opens it (`UnitHost`), and of the messaging layer
its events go to when it ends (`Outlet`): protocols, so the storage layer never imports the
service or the messaging layer above it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from loom.runtime.storage.engine import UnitEngines
from loom.runtime.values.domain import DomainEvent
from loom.runtime.values.faults import Faults

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer


class Outlet(Protocol):
    """Where a unit of work's events go when it ends (the messaging layer's `messaging.outlet.Outlet`)."""

    @property
    def routes(self) -> Mapping[str, object]:
        """Event type -> the durable channel carrying it (empty: every event is in-process)."""
        ...

    async def write(self, conn: AsyncConnection, events: Sequence[DomainEvent]) -> Sequence[Any]:
        """Write the outbox rows of durable `events` on `conn`, inside its transaction; answers
        what `sent` is to be given once they committed (the messaging layer's, opaque here)."""
        ...

    async def dispatch(self, events: Sequence[DomainEvent]) -> None:
        """Run the in-process reactions to `events` (after the commit)."""
        ...

    def sent(self, written: Sequence[Any]) -> None:
        """Outbox rows were committed (`written`: what `write` answered): this process's relay
        takes them."""
        ...


class UnitHost(Protocol):
    """What a unit of work needs of the service that opens it."""

    @property
    def dialect(self) -> str: ...

    @property
    def lock_reads(self) -> bool: ...

    @property
    def sqlite_writer(self) -> asyncio.Lock | None: ...

    @property
    def unit_engines(self) -> UnitEngines: ...

    @property
    def faults(self) -> Faults: ...

    @property
    def outlet(self) -> Outlet: ...

    @property
    def tracer(self) -> Tracer | None:
        """The service's spans; None: it does not trace."""
        ...

    @property
    def instance_answers(self) -> Mapping[str, Any]:
        """Process -> the generated model its ended episodes are archived as (`processes.episodes`)."""
        ...
