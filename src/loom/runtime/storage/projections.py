"""Projection rows: read models folded from events, one row per key.

Generated (for `projection TicketStats { ticket: Ticket id  resolved: int = 0  on(…) … }`):

    @dataclass(kw_only=True)
    class TicketStatsRow:           # in domain.py: the key field and the other fields
        ticket: TicketId
        resolved: int = 0

    class TicketStatsRows(Rows[TicketStatsRow]):
        state = TicketStatsRow
        table = tables.ticket_stats_rows
        key = "ticket"
        workflow = "TicketStats"    # the projection's name (in 404 problems)

A reaction folds its event into a row with `await rows.bind(key)` (load, or allocate with the
declared defaults) and `await rows.save(row)` (INSERT at version 1, else a version-checked UPDATE),
in its own transaction, so a redelivered event is skipped by the inbox rather than counted twice.
The GET routes read with `get(key)` (a 404 named after the projection) and `page(limit, offset)`.

A tenanted context's projection keeps its rows per (tenant, key), like workflow instances
(`storage/instances.py`): the fold runs in its event's tenant, and every read is the caller's tenant's.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import func, select
from sqlalchemy.exc import StatementError

from loom.runtime.storage.instances import Instances
from loom.runtime.values.errors import NotFound
from loom.runtime.values.principal import current_tenant
from loom.runtime.values.schemas import Page

__all__ = ["Rows"]

S = TypeVar("S")


class Rows(Instances[S]):
    """The rows of one projection (subclassed by generated code)."""

    __slots__ = ()

    async def get(self, key: Any) -> S:
        """The row keyed by `key`; `NotFound` (named by the projection) when no event made one."""
        found = await self.find(key)
        if found is None:
            raise NotFound(self.workflow, key, f"{self.workflow} has no row for {key}")
        return found

    async def page(self, limit: int, offset: int) -> Page[S]:
        """One page of rows, ordered by key."""
        st = self._statements()
        table = self.table
        work = self.work
        conn = work._conn or await work.connection()
        count = select(func.count()).select_from(table)
        rows = select(*st.mapper.columns).order_by(table.c[self.key]).limit(limit).offset(offset)
        if st.tenant is not None:
            mine = st.tenant == current_tenant()
            count, rows = count.where(mine), rows.where(mine)
        try:
            total = (await conn.execute(count)).scalar_one()
            found = (await conn.execute(rows)).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow)
        load = st.mapper.load
        return Page.model_construct(
            items=[load(r) for r in found], limit=limit, offset=offset, total=total
        )
