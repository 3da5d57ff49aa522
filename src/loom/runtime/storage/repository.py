"""Repositories: load and save aggregates with optimistic versioning."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Self, TypeVar
from uuid import UUID

from sqlalchemy import Select, Table, bindparam, delete, func, insert, select, update
from sqlalchemy.exc import StatementError
from sqlalchemy.sql.elements import True_

from loom.runtime.storage.criteria import sort_key
from loom.runtime.storage.dberrors import clashed_unique, classify
from loom.runtime.storage.mapping import DELETED_ATTR, VERSION_ATTR, Mapper, tenant_column
from loom.runtime.storage.work import Work
from loom.runtime.values.domain import AggregateRoot
from loom.runtime.values.errors import ConcurrencyConflict, DuplicateKey, NotFound, key_not_found
from loom.runtime.values.principal import current_tenant
from loom.runtime.values.schemas import Page

A = TypeVar("A", bound=AggregateRoot)


class _Statements:
    """Statements and the mapper of one repository class, built once."""

    __slots__ = (
        "by_id",
        "by_id_locked",
        "by_ids",
        "by_ids_locked",
        "count",
        "delete",
        "insert",
        "mapper",
        "page",
        "tenant",
        "update",
    )

    def __init__(self, aggregate: type, table: Table) -> None:
        self.mapper = Mapper(aggregate, table)
        c = table.c
        cols = self.mapper.columns
        self.by_id = select(*cols).where(c.id == bindparam("id"))
        self.by_id_locked = self.by_id.with_for_update()
        self.by_ids = select(*cols).where(c.id.in_(bindparam("ids", expanding=True)))
        self.by_ids_locked = self.by_ids.order_by(c.id).with_for_update()
        self.insert = insert(table)
        # a tenanted context's rows: every statement is scoped to the caller's tenant
        self.tenant = tenant_column(table)
        row = [c.id == bindparam("_loom_id"), c.version == bindparam("_loom_v")]
        if self.tenant is not None:
            row.append(self.tenant == bindparam("_loom_tenant"))
        self.update = update(table).where(*row).values(version=c.version + 1)
        self.delete = delete(table).where(*row)
        self.count = select(func.count()).select_from(table)
        self.page: Select[Any] = select(*cols).order_by(c.id)


class Repository(Generic[A]):
    """Generated: `class Accounts(Repository[Account]): aggregate = Account; table = accounts`."""

    aggregate: ClassVar[type]
    table: ClassVar[Table]
    #: the natural keys (`unique (…)`, model field names): a save that breaks one raises
    #: `DuplicateKey` (409) instead of `ConcurrencyConflict`
    unique: ClassVar[tuple[tuple[str, ...], ...]] = ()
    #: the repository's filters (`filter Live` in the model): name -> where-clause factory. Every
    #: read applies them unless the repository was widened with `ignoring(name, ...)`.
    filters: ClassVar[Mapping[str, Callable[[], Any]]] = {}
    _loom_statements: ClassVar[_Statements | None] = None

    __slots__ = ("_ignored", "work")

    def __init__(self, work: Work) -> None:
        self.work = work
        self._ignored: frozenset[str] = frozenset()

    def ignoring(self, *names: str) -> Self:
        """This repository with the named filters switched off (the model's `ignoring …`)."""
        unknown = [n for n in names if n not in self.filters]
        if unknown:
            raise ValueError(f"{type(self).__name__} has no filter {unknown[0]!r}")
        widened = type(self)(self.work)
        widened._ignored = self._ignored | frozenset(names)
        return widened

    def _filter_clauses(self) -> list[Any]:
        """The where-clauses every read adds: the repository's filters, and in a tenanted
        context the caller's tenant (another tenant's rows are not there, whatever is asked)."""
        filters = self.filters
        tenant = self._statements().tenant
        if not filters and tenant is None:
            return []
        made = (make() for name, make in filters.items() if name not in self._ignored)
        # a read rule that admits every row for this caller (an assessor's) adds nothing: the
        # read is then the same statement as without it
        clauses = [c for c in made if not isinstance(c, True_)]
        if tenant is not None:
            clauses.append(tenant == current_tenant())
        return clauses

    @classmethod
    def _statements(cls) -> _Statements:
        found = cls.__dict__.get("_loom_statements")
        if found is None:
            found = _Statements(cls.aggregate, cls.table)
            cls._loom_statements = found
        return found

    # -- reads ------------------------------------------------------------------------------
    async def find_by_id(self, id: UUID) -> A | None:
        st = self._statements()
        work = self.work
        stmt = st.by_id_locked if work.lock_reads else st.by_id
        clauses = self._filter_clauses()
        if clauses:
            stmt = stmt.where(*clauses)
        conn = work._conn or await work.connection()
        try:
            row = (await conn.execute(stmt, {"id": id})).first()
        except (StatementError, OverflowError) as err:
            work._reraise(err, st.mapper.name, id)
        return None if row is None else st.mapper.load(row)

    async def get_by_id(self, id: UUID) -> A:
        found = await self.find_by_id(id)
        if found is None:
            raise NotFound(self._statements().mapper.name, id)
        return found

    async def get_many(self, ids: Sequence[UUID]) -> list[A]:
        """Load several aggregates in one query, answered in the order of `ids`; `NotFound`
        for the first id that does not exist."""
        st = self._statements()
        work = self.work
        stmt = st.by_ids_locked if work.lock_reads else st.by_ids
        clauses = self._filter_clauses()
        if clauses:
            stmt = stmt.where(*clauses)
        conn = work._conn or await work.connection()
        try:
            rows = (await conn.execute(stmt, {"ids": list(dict.fromkeys(ids))})).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, st.mapper.name)
        load = st.mapper.load
        by_id = {}
        for row in rows:
            obj = load(row)
            by_id[obj.id] = obj
        result = []
        for id in ids:
            found = by_id.get(id)
            if found is None:
                raise NotFound(st.mapper.name, id)
            result.append(found)
        return result

    async def page(self, limit: int, offset: int) -> Page[A]:
        """One page of aggregates ordered by id (creation order for UUIDv7 ids)."""
        st = self._statements()
        work = self.work
        count, rows_stmt = st.count, st.page
        clauses = self._filter_clauses()
        if clauses:
            count, rows_stmt = count.where(*clauses), rows_stmt.where(*clauses)
        conn = work._conn or await work.connection()
        try:
            total = (await conn.execute(count)).scalar_one()
            rows = (await conn.execute(rows_stmt.limit(limit).offset(offset))).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, st.mapper.name)
        load = st.mapper.load
        return Page.model_construct(
            items=[load(r) for r in rows], limit=limit, offset=offset, total=total
        )

    async def find_all(
        self,
        *where: Any,
        order_by: Any = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> list[A]:
        """Aggregates matching SQLAlchemy criteria on the table's columns (ordered by id unless
        `order_by` is given), for generated finders: `find_all(accounts.c.owner == owner)`."""
        st = self._statements()
        stmt = select(*st.mapper.columns).where(*where, *self._filter_clauses())
        stmt = stmt.order_by(sort_key(order_by) if order_by is not None else self.table.c.id)
        if limit is not None:
            stmt = stmt.limit(limit)
        if offset is not None:
            stmt = stmt.offset(offset)
        if self.work.lock_reads:
            stmt = stmt.with_for_update()
        rows = await self._rows(stmt)
        load = st.mapper.load
        return [load(r) for r in rows]

    async def find_one(self, *where: Any) -> A | None:
        """The first aggregate (by id) matching the criteria, or None."""
        found = await self.find_all(*where, limit=1)
        return found[0] if found else None

    async def get_one(self, *where: Any, key: object = None) -> A:
        """The first aggregate matching the criteria; `NotFound` (naming `key`) when none. A
        mapping `key` (field -> value) is the fields matched: `no Due with booking 7`."""
        found = await self.find_all(*where, limit=1)
        if not found:
            name = self._statements().mapper.name
            if isinstance(key, Mapping):
                raise key_not_found(name, key)
            raise NotFound(name, key, f"{name} {key} does not exist")
        return found[0]

    async def count(self, *where: Any) -> int:
        """How many rows match the criteria (all rows without criteria)."""
        stmt = select(func.count()).select_from(self.table).where(*where, *self._filter_clauses())
        return int((await self._rows(stmt))[0][0])

    async def _rows(self, stmt: Any) -> Any:
        work = self.work
        conn = work._conn or await work.connection()
        try:
            return (await conn.execute(stmt)).all()
        except (StatementError, OverflowError) as err:
            work._reraise(err, self._statements().mapper.name)

    # -- writes -----------------------------------------------------------------------------
    async def save(self, aggregate: A, *, carry_emits: bool = False) -> None:
        """INSERT (version 1) a never-saved aggregate, else UPDATE ... WHERE version = v.
        `ConcurrencyConflict` when the row changed (or, on insert, already exists).
        `carry_emits`: the last save of a group in a body that is not transactional; the durable
        events the body emitted so far are written in its commit (`Work._write_connection`)."""
        st = self._statements()
        mapper = st.mapper
        work = self.work
        d = aggregate.__dict__
        id = d["id"]
        if d.get(DELETED_ATTR):
            # Deleted earlier in this unit of work (on the path the body took): nothing to write.
            return
        version = d.get(VERSION_ATTR, 0)
        changed = mapper.changes(aggregate) if version else None
        if version and not changed and not aggregate._loom_events:
            # Loaded, and the path the body took changed nothing (an operation on the branch
            # that did not run): no write, no new version.
            return
        # Before the write, not when the answer is built: a row that is stored can be read back.
        aggregate._check_stored()
        work._before_save(mapper.name, id)
        # autocommit + durable events: a short transaction for the row and its outbox rows
        conn = await work._write_connection(aggregate, carry_emits)
        try:
            if version == 0:
                params = mapper.dump(aggregate)
                params["version"] = 1
                if st.tenant is not None:
                    params[st.tenant.key] = current_tenant()
                await conn.execute(st.insert, params)
            else:
                # only the columns that changed since the load (no needless writes, no
                # foreign-key checks of untouched references); the version check is the same
                params = changed or {}
                params["_loom_id"] = id
                params["_loom_v"] = version
                if st.tenant is not None:
                    params["_loom_tenant"] = current_tenant()
                result = await conn.execute(st.update, params)
                if result.rowcount != 1:
                    raise ConcurrencyConflict(mapper.name, id)
        except (StatementError, OverflowError) as err:
            if self.unique and classify(err) == "duplicate":
                raise self._duplicate(err) from err
            work._reraise(err, mapper.name, id, sending=True)
        work._wrote = True
        d[VERSION_ATTR] = version + 1
        mapper.snapshot(aggregate)
        await work._after_save(aggregate._take_events(), (mapper.name, id))

    @classmethod
    def _duplicate(cls, err: BaseException) -> DuplicateKey:
        """The 409 naming the natural key that clashed (of several, the one the database named)."""
        name = cls._statements().mapper.name
        columns = clashed_unique(err, cls.table)
        if columns is not None:
            by_column = {c.name: c.info.get("loom", {}).get("field") for c in cls.table.columns}
            fields = {by_column.get(c) for c in columns} - {None}
            for key in cls.unique:
                if set(key) == fields:
                    return DuplicateKey(name, key)
        if len(cls.unique) == 1:
            return DuplicateKey(name, cls.unique[0])
        keys = " or ".join(f"({', '.join(key)})" for key in cls.unique)
        return DuplicateKey(name, detail=f"another {name} already has one of its keys {keys}")

    async def delete(self, aggregate: A, *, carry_emits: bool = False) -> None:
        """DELETE the aggregate's row if its version still matches, else `ConcurrencyConflict`;
        its pending events are dispatched like a save's, and `carry_emits` is a save's."""
        st = self._statements()
        mapper = st.mapper
        work = self.work
        id = aggregate.id
        version = aggregate.__dict__.get(VERSION_ATTR, 0)
        if version == 0:
            raise NotFound(mapper.name, id)
        conn = await work._write_connection(aggregate, carry_emits)
        params: dict[str, Any] = {"_loom_id": id, "_loom_v": version}
        if st.tenant is not None:
            params["_loom_tenant"] = current_tenant()
        try:
            result = await conn.execute(st.delete, params)
        except (StatementError, OverflowError) as err:
            work._reraise(err, mapper.name, id, sending=True)
        work._wrote = True
        if result.rowcount != 1:
            raise ConcurrencyConflict(mapper.name, id)
        aggregate.__dict__[VERSION_ATTR] = 0
        aggregate.__dict__[DELETED_ATTR] = True
        await work._after_save(aggregate._take_events(), (mapper.name, id))
