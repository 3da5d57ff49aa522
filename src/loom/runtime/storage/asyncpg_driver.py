"""PostgreSQL through asyncpg with less Python per statement.

SQLAlchemy's asyncpg adapter runs each statement as a coroutine that, besides the statement
itself, awaits two more coroutines to find its prepared statement in its own cache (which a
statement built once always hits), builds the statement's description anew (a 7-tuple per
column), and reads the row count from the command status with `re.match(pattern, …)`. That is a
few microseconds per statement, a few per cent of a request's CPU on a service whose statements
are built once. `LeanDBAPI` is that adapter with a cursor that takes the cache hit inline, keeps
the description of each prepared statement, and reads the status with a pattern compiled once:
the same statements, the same mutex and transaction handling, the same prepared statements and
invalidation; anything else (a miss, a schema change seen by another connection) goes the
adapter's own way.

It uses what SQLAlchemy's adapter itself uses: its connection's prepared-statement cache
(`_prepared_statement_cache`: operation -> (statement, attributes, when prepared)) and schema
timestamp, its mutex and `_start_transaction`.
"""

from __future__ import annotations

import collections
import re
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints
from sqlalchemy.dialects.postgresql.asyncpg import (
    AsyncAdapt_asyncpg_connection,
    AsyncAdapt_asyncpg_cursor,
    AsyncAdapt_asyncpg_dbapi,
)
from sqlalchemy.util.concurrency import await_

# the adapter's reading of a command status ("UPDATE 2", "INSERT 0 1"; anything else is -1),
# compiled once: the adapter's `re.match(pattern, …)` looks its pattern up on every statement
_COUNTED = re.compile(r"(?:SELECT|UPDATE|DELETE|INSERT \d+) (\d+)")


def rowcount_of(status: str | None) -> int:
    """The row count of a command status, as SQLAlchemy's asyncpg adapter reads it."""
    found = _COUNTED.match(status or "")
    return int(found.group(1)) if found else -1


# descriptions kept per connection: twice the adapter's cache of prepared statements (100), so a
# service whose statements are built once keeps all of theirs, and one that makes statements per
# call (criteria of many shapes) does not grow without end
_DESCRIPTIONS_KEPT = 200


def _description(attributes: Any) -> list[tuple[Any, ...]] | None:
    if not attributes:
        return None
    return [(a.name, a.type.oid, None, None, None, None, None) for a in attributes]


class _LeanCursor(AsyncAdapt_asyncpg_cursor):
    # client-side only: server-side cursors (`stream()`) keep the adapter's own class
    __slots__ = ()

    async def _prepare_and_execute(self, operation: Any, parameters: Any) -> None:
        adapt: Any = self._adapt_connection
        async with adapt._execute_mutex:
            if adapt._transaction is None:
                await adapt._start_transaction()
            try:
                asof = self._invalidate_schema_cache_asof
                cache = adapt._prepared_statement_cache
                # the adapter's cache hit, taken here: no schema change to reload, and the
                # statement prepared after the last one (`AsyncAdapt_asyncpg_connection._prepare`)
                hit = None
                if cache is not None and asof <= adapt._invalidate_schema_cache_asof:
                    hit = cache.get(operation)
                    if hit is not None and hit[2] <= asof:
                        hit = None
                if hit is None:
                    prepared, attributes = await adapt._prepare(operation, asof)
                else:
                    prepared, attributes = hit[0], hit[1]
                descriptions = adapt._descriptions
                described = descriptions.get(operation)
                if described is None or described[0] is not attributes:
                    if len(descriptions) >= _DESCRIPTIONS_KEPT:  # statements made per call
                        descriptions.clear()
                    described = (attributes, _description(attributes))
                    descriptions[operation] = described
                self._description = described[1]
                self._rows = collections.deque(
                    await prepared.fetch(*(() if parameters is None else parameters))
                )
                self._rowcount = rowcount_of(prepared.get_statusmsg())
            except Exception as error:  # noqa: BLE001  # mapped to a DBAPI error, as the adapter does
                self._handle_exception(error)  # type: ignore[no-untyped-call]


class _LeanConnection(AsyncAdapt_asyncpg_connection):
    # operation -> (the attributes of its prepared statement, the description made of them)
    __slots__ = ("_descriptions",)
    _cursor_cls = _LeanCursor

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._descriptions: dict[str, tuple[Any, Any]] = {}


class LeanDBAPI(AsyncAdapt_asyncpg_dbapi):
    """SQLAlchemy's asyncpg DBAPI adapter, its connections' cursors `_LeanCursor`s."""

    def connect(self, *arg: Any, **kw: Any) -> Any:
        # the adapter's own `connect`, making a `_LeanConnection`
        creator = kw.pop("async_creator_fn", self.asyncpg.connect)
        size = kw.pop("prepared_statement_cache_size", 100)
        name_func = kw.pop("prepared_statement_name_func", None)
        return await_(
            _LeanConnection.create(
                self,
                creator(*arg, **kw),
                prepared_statement_cache_size=size,
                prepared_statement_name_func=name_func,
            )
        )


def lean_dbapi() -> LeanDBAPI:
    """The DBAPI module to give `create_async_engine(module=…)` for a `postgresql+asyncpg` URL."""
    return LeanDBAPI(asyncpg)  # type: ignore[no-untyped-call]
