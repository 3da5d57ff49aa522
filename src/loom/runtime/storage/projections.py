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

A projection's read rule (`filter <condition>` in the model) is `filters`, as a repository's: the
GET routes (`get`, `page`) apply it for their caller, so a row it hides is a 404 and in no page;
the folds (`bind`, `save`) never do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

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

    #: the read rule: name -> where-clause factory, built for the caller of each read
    filters: ClassVar[Mapping[str, Callable[[], Any]]] = {}

    async def get(self, key: Any) -> S:
        """The row keyed by `key`; `NotFound` (named by the projection) when no event made one,
        or when the read rule hides it from the caller."""
        if not self.filters:
            found = await self.find(key)
        else:
            st = self._statements()
            stmt = st.by_key.where(*(make() for make in self.filters.values()))
            work = self.work
            conn = work._conn or await work.connection()
            try:
                row = (await conn.execute(stmt, st.params(key))).first()
            except (StatementError, OverflowError) as err:
                work._reraise(err, self.workflow, key)
            found = None if row is None else st.mapper.load(row)
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
        clauses = [make() for make in self.filters.values()]
        if st.tenant is not None:
            clauses.append(st.tenant == current_tenant())
        if clauses:
            count, rows = count.where(*clauses), rows.where(*clauses)
        try:
            total = (await conn.execute(count)).scalar_one()
            found = (await conn.execute(rows)).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, self.workflow)
        load = st.mapper.load
        return Page.model_construct(
            items=[load(r) for r in found], limit=limit, offset=offset, total=total
        )
