"""Runtime support for the workflow language, on SQLite and PostgreSQL: criteria helpers (decimals
compare numerically, datetimes chronologically, enums by value), natural keys (DuplicateKey),
`not_found`, workflow instances and extern loading."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from types import ModuleType
from uuid import UUID

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, Uuid, and_

from loom.runtime import (
    AggregateRoot,
    ConcurrencyConflict,
    DuplicateKey,
    ExternError,
    Instances,
    NotFound,
    Repository,
    Service,
    as_number,
    instance_version,
    load_externs,
    new_id,
    not_found,
    sql_bool,
)
from loom.runtime.types import DecimalText, UtcDateTime

metadata = MetaData()
things = Table(
    "wl_things",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("code", String, nullable=False, unique=True),
    Column("price", DecimalText, nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("kind", String, nullable=False),
)
runs = Table(
    "wl_runs",
    metadata,
    Column("thing", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("count", Integer, nullable=False),
)


@dataclass(eq=False, kw_only=True)
class Thing(AggregateRoot):
    id: UUID
    code: str
    price: Decimal
    at: datetime
    kind: str


class Things(Repository[Thing]):
    aggregate = Thing
    table = things
    unique = (("code",),)


@dataclass(kw_only=True)
class RunState:
    thing: UUID
    count: int = 0


class Runs(Instances[RunState]):
    state = RunState
    table = runs
    key = "thing"
    workflow = "Run"


@pytest.fixture
async def service(database_url: str) -> AsyncIterator[Service]:
    svc = Service.from_url(database_url, metadata)
    await svc.create_schema()
    try:
        yield svc
    finally:
        await svc.dispose()


def thing(code: str, price: str, at: datetime, kind: str = "Open") -> Thing:
    return Thing(id=new_id(), code=code, price=Decimal(price), at=at, kind=kind)


async def test_criteria_compare_in_sql(service: Service) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    plus5 = timezone(timedelta(hours=5))
    rows = [
        thing("a", "9.5", base),
        thing("b", "10", base + timedelta(hours=2)),
        thing("c", "100", datetime(2026, 1, 1, 4, tzinfo=plus5), "Closed"),  # 2025-12-31 23:00Z
        thing("d", "-0.5", base + timedelta(days=1)),
    ]
    async with service.transaction() as work:
        for row in rows:
            await Things(work).save(row)
    c = things.c
    async with service.autocommit() as work:
        repo = Things(work)

        async def codes(*where: object) -> list[str]:
            return sorted(t.code for t in await repo.find_all(*where))

        assert await codes(as_number(c.price) > as_number(Decimal("9.6"))) == ["b", "c"]
        assert await codes(as_number(c.price) <= as_number(10)) == ["a", "b", "d"]
        assert await codes(as_number(c.price) < as_number(0)) == ["d"]
        assert await codes(c.at < base + timedelta(hours=1)) == ["a", "c"]
        assert await codes(and_(c.kind == "Open", c.at >= base)) == ["a", "b", "d"]
        assert await codes(sql_bool(False)) == []
        assert len(await repo.find_all(sql_bool(True))) == 4
        ordered = await repo.find_all(order_by=as_number(c.price))
        assert [t.code for t in ordered] == ["d", "a", "b", "c"]
        assert await repo.count(as_number(c.price) >= as_number(Decimal("9.5"))) == 3
        with pytest.raises(NotFound) as miss:
            await repo.get_one(c.code == "zz", key="zz")
        assert miss.value.aggregate == "Thing"


async def test_duplicate_natural_key_is_409(service: Service) -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    async with service.autocommit() as work:
        await Things(work).save(thing("a", "1", at))
    for unit in (service.autocommit, service.transaction):
        with pytest.raises(DuplicateKey) as dup:
            async with unit() as work:
                await Things(work).save(thing("a", "2", at))
        assert dup.value.status == 409 and dup.value.aggregate == "Thing"
        assert "code" in dup.value.detail


def test_not_found_statement() -> None:
    bare = not_found("Ticket")
    assert (bare.status, bare.detail, bare.extensions()) == (
        404,
        "Ticket not found",
        {"aggregate": "Ticket"},
    )
    assert not_found("Ticket", "no open ticket").detail == "no open ticket"


async def test_instances_bind_and_save(service: Service) -> None:
    key = new_id()
    async with service.autocommit() as work:
        assert await Runs(work).find(key) is None
        fresh = await Runs(work).bind(key)
        assert (fresh.count, instance_version(fresh)) == (0, 0)
        fresh.count = 3
        await Runs(work).save(fresh)
    async with service.transaction() as work:
        again = await Runs(work).bind(key)
        assert (again.count, instance_version(again)) == (3, 1)
        again.count += 1
        await Runs(work).save(again)
    async with service.autocommit() as work:
        stored = await Runs(work).get(key)
        assert (stored.count, instance_version(stored)) == (4, 2)
        with pytest.raises(NotFound):
            await Runs(work).get(new_id())
        # a stale copy loses the race
        stale = await Runs(work).get(key)
        await Runs(work).save(await Runs(work).get(key))
        with pytest.raises(ConcurrencyConflict):
            await Runs(work).save(stale)
        # two first binds of one key: the second insert conflicts
        other = new_id()
        first, second = await Runs(work).bind(other), await Runs(work).bind(other)
        await Runs(work).save(first)
        with pytest.raises(ConcurrencyConflict):
            await Runs(work).save(second)


class _Good:
    def notify(self, ticket: object, channel: str) -> None:
        pass


def test_load_externs(monkeypatch: pytest.MonkeyPatch) -> None:
    module = ModuleType("wl_externs_ok")
    module.TicketExterns = _Good  # type: ignore[attr-defined]

    class Broken:
        pass

    module.AgentExterns = Broken  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wl_externs_ok", module)
    monkeypatch.delenv("LOOM_EXTERN_MODULE", raising=False)
    assert load_externs(None, {}) == {}
    found = load_externs("wl_externs_ok", {"TicketExterns": ("notify",)})
    assert isinstance(found["TicketExterns"], _Good)
    with pytest.raises(ExternError, match="lacks the method"):
        load_externs("wl_externs_ok", {"AgentExterns": ("take",)})
    with pytest.raises(ExternError, match="LOOM_EXTERN_MODULE"):
        load_externs(None, {"TicketExterns": ("notify",)})
    monkeypatch.setenv("LOOM_EXTERN_MODULE", "wl_externs_ok")
    assert set(load_externs(None, {"TicketExterns": ("notify",)})) == {"TicketExterns"}
