"""The repository, on every backend: every column type round-trips, versions advance, stale
writes and deletes conflict, pages are ordered, finders and filters narrow every read. (The
runtime sample's `service` fixture serves on the backend's database.)"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from types import MappingProxyType
from uuid import UUID

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, Uuid, select

from loom.runtime import ConcurrencyConflict, NotFound, Repository, Service, new_id
from loom.runtime.values.errors import InvalidValue

from ..sample_service import Item, Items, Level, items

THIRTY_DIGITS = Decimal("12345678901234567890.1234567890")
PLUS_TWO = timezone(timedelta(hours=2))


def full_item() -> Item:
    return Item(
        name="full",
        count=2**62,
        amount=THIRTY_DIGITS,
        due=date(2031, 12, 31),
        happened_at=datetime(2030, 6, 1, 12, 30, 15, 123456, tzinfo=PLUS_TWO),
        level=Level.HIGH,
        maybe_level=Level.LOW,
        note="ünïcødé ✓",
        tags=["a", "b"],
        amounts=[THIRTY_DIGITS, Decimal("-0.000000000000000000000001"), Decimal("1.50")],
        dates=[date(1999, 1, 2)],
        stamps=[datetime(2001, 2, 3, 4, 5, 6, 7, tzinfo=PLUS_TWO)],
        refs=[new_id(), new_id()],
        levels=[Level.HIGH, Level.LOW],
        flags=[True, False],
        numbers=[0, -1, 2**63 - 1],
        closed=True,
    )


async def load(service: Service, id: UUID) -> Item:
    async with service.autocommit() as work:
        return await Items(work).get_by_id(id)


async def test_every_column_type_round_trips(service: Service) -> None:
    original = full_item()
    async with service.transaction() as work:
        await Items(work).save(original)
    loaded = await load(service, original.id)
    for name in (
        "name",
        "count",
        "amount",
        "due",
        "level",
        "maybe_level",
        "note",
        "tags",
        "amounts",
        "dates",
        "refs",
        "levels",
        "flags",
        "numbers",
        "closed",
    ):
        assert getattr(loaded, name) == getattr(original, name), name
        assert type(getattr(loaded, name)) is type(getattr(original, name)), name
    assert str(loaded.amount) == "12345678901234567890.1234567890"
    assert [str(a) for a in loaded.amounts] == [str(a) for a in original.amounts]
    assert type(loaded.level) is Level and type(loaded.levels[0]) is Level
    assert all(type(r) is UUID for r in loaded.refs)
    # datetimes: same instant, delivered as aware UTC
    assert loaded.happened_at == original.happened_at
    assert loaded.happened_at.tzinfo is not None and loaded.happened_at.utcoffset() == timedelta(0)
    assert loaded.stamps == original.stamps and loaded.stamps[0].utcoffset() == timedelta(0)
    assert loaded.id == original.id and loaded._loom_version == 1


async def test_optional_none_round_trips(service: Service) -> None:
    original = Item(name="empty")
    async with service.autocommit() as work:
        await Items(work).save(original)
    loaded = await load(service, original.id)
    assert loaded.due is None and loaded.maybe_level is None and loaded.note is None
    assert loaded.tags == [] and loaded.amount == Decimal(0) and loaded.closed is False


async def test_naive_datetime_is_taken_as_utc(service: Service) -> None:
    original = Item(name="naive", happened_at=datetime(2030, 1, 1, 8, 0))
    async with service.autocommit() as work:
        await Items(work).save(original)
    loaded = await load(service, original.id)
    assert loaded.happened_at == datetime(2030, 1, 1, 8, 0, tzinfo=UTC)


async def test_version_increments_on_each_save(service: Service) -> None:
    item = Item(name="v")
    assert item._loom_version == 0
    async with service.autocommit() as work:
        await Items(work).save(item)
    assert item._loom_version == 1
    for expected in (2, 3):
        async with service.transaction() as work:
            repo = Items(work)
            loaded = await repo.get_by_id(item.id)
            loaded.increment(1)
            await repo.save(loaded)
        assert loaded._loom_version == expected
    async with service.engine.connect() as conn:
        row = (await conn.execute(select(items.c.version, items.c.count))).one()
    assert tuple(row) == (3, 2)


async def test_stale_version_conflicts(service: Service) -> None:
    item = Item(name="stale")
    async with service.autocommit() as work:
        await Items(work).save(item)
    first, second = await load(service, item.id), await load(service, item.id)
    first.increment(1)
    async with service.autocommit() as work:
        await Items(work).save(first)
    second.increment(5)
    with pytest.raises(ConcurrencyConflict) as caught:
        async with service.transaction() as work:
            await Items(work).save(second)
    assert caught.value.aggregate == "Item" and caught.value.id == item.id
    assert (await load(service, item.id)).count == 1


async def test_duplicate_insert_conflicts(service: Service) -> None:
    item = Item(name="dup")
    async with service.autocommit() as work:
        await Items(work).save(item)
    clone = Item(name="dup", id=item.id)
    with pytest.raises(ConcurrencyConflict):
        async with service.autocommit() as work:
            await Items(work).save(clone)
    with pytest.raises(ConcurrencyConflict):
        async with service.transaction() as work:
            await Items(work).save(Item(name="dup", id=item.id))


async def test_missing_and_many(service: Service) -> None:
    a, b = Item(name="a"), Item(name="b")
    async with service.transaction() as work:
        repo = Items(work)
        await repo.save(a)
        await repo.save(b)
    async with service.autocommit() as work:
        repo = Items(work)
        assert await repo.find_by_id(new_id()) is None
        missing = new_id()
        with pytest.raises(NotFound) as caught:
            await repo.get_by_id(missing)
        assert caught.value.aggregate == "Item" and caught.value.id == missing
        assert [x.name for x in await repo.get_many([b.id, a.id, b.id])] == ["b", "a", "b"]
        with pytest.raises(NotFound):
            await repo.get_many([a.id, missing])


async def test_page_is_ordered_by_creation_with_total(service: Service) -> None:
    created = [Item(name=f"i{n}") for n in range(7)]
    for item in created:  # separate units of work, creation order
        async with service.autocommit() as work:
            await Items(work).save(item)
    async with service.autocommit() as work:
        page = await Items(work).page(3, 2)
        everything = await Items(work).page(100, 0)
        beyond = await Items(work).page(10, 50)
    assert [i.name for i in page.items] == ["i2", "i3", "i4"]
    assert (page.limit, page.offset, page.total) == (3, 2, 7)
    assert [i.id for i in everything.items] == [i.id for i in created]
    assert beyond.items == [] and beyond.total == 7


async def test_delete_checks_version(service: Service) -> None:
    item = Item(name="gone")
    async with service.autocommit() as work:
        await Items(work).save(item)
    stale = await load(service, item.id)
    async with service.transaction() as work:
        await Items(work).delete(await Items(work).get_by_id(item.id))
    with pytest.raises(ConcurrencyConflict):
        async with service.autocommit() as work:
            await Items(work).delete(stale)
    async with service.autocommit() as work:
        assert await Items(work).find_by_id(item.id) is None


def test_mapping_refuses_a_table_that_does_not_match() -> None:
    other = Table(
        "runtime_bad",
        MetaData(),
        Column("id", Uuid, primary_key=True),
        Column("version", Integer),
        Column("name", String),
    )

    class Bad(Repository[Item]):
        aggregate = Item
        table = other

    with pytest.raises(TypeError, match="fields without a column"):
        Bad._statements()


# the bounds of a `decimal` (loom.runtime.decimals): 50 digits before the point, 50 after
@pytest.mark.parametrize(
    "text", ["9" * 50 + "." + "9" * 50, "-1E-50", "12345678901234567890E+30", "1.5" + "0" * 80]
)
async def test_extreme_decimals_round_trip_exactly(service: Service, text: str) -> None:
    item = Item(name="extreme", amount=Decimal(text))
    async with service.autocommit() as work:
        await Items(work).save(item)
    assert (await load(service, item.id)).amount == Decimal(text)


@pytest.mark.parametrize(
    "changes",
    [
        {"amount": Decimal("1E+50")},
        {"amount": Decimal("1E-51")},
        {"amount": Decimal("NaN")},
        {"count": 2**63},
        {"count": -(2**63) - 1},
    ],
    ids=["decimal-too-large", "decimal-too-fine", "nan", "int-too-large", "int-too-small"],
)
async def test_values_the_database_cannot_hold_are_refused_not_altered(
    service: Service, changes: dict[str, object]
) -> None:
    item = Item(name="bad", **changes)  # type: ignore[arg-type]
    with pytest.raises(InvalidValue):
        async with service.transaction() as work:
            await Items(work).save(item)
    async with service.autocommit() as work:
        assert await Items(work).find_by_id(item.id) is None


async def test_datetimes_at_the_edges_of_the_calendar(service: Service) -> None:
    edges = [datetime(5, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
    item = Item(name="edges", happened_at=edges[0], stamps=edges)
    async with service.autocommit() as work:
        await Items(work).save(item)
    loaded = await load(service, item.id)
    assert loaded.happened_at == edges[0] and loaded.stamps == edges


async def test_finders_by_criteria(service: Service) -> None:
    made = [Item(name="f", level=Level.HIGH if n % 2 else Level.LOW, count=n) for n in range(5)]
    async with service.transaction() as work:
        for item in made:
            await Items(work).save(item)
    async with service.autocommit() as work:
        repo = Items(work)
        high = await repo.find_all(items.c.level == Level.HIGH.value)
        assert [i.count for i in high] == [1, 3] and all(i.level is Level.HIGH for i in high)
        assert (await repo.find_one(items.c.count == 4)).id == made[4].id  # type: ignore[union-attr]
        assert await repo.find_one(items.c.count == 99) is None
        assert await repo.count() == 5 and await repo.count(items.c.count >= 3) == 2
        desc = await repo.find_all(order_by=items.c.count.desc(), limit=2, offset=1)
        assert [i.count for i in desc] == [3, 2]


class OpenItems(Items):
    """`filter Open` of a model: every read through it hides closed items."""

    filters = MappingProxyType({"open": lambda: items.c.closed.is_(False)})


async def test_filters_hide_rows_from_every_read_and_ignoring_widens(service: Service) -> None:
    open_, closed = Item(name="open", count=1), Item(name="closed", count=1, closed=True)
    async with service.transaction() as work:
        for item in (open_, closed):
            await Items(work).save(item)
    async with service.autocommit() as work:
        repo = OpenItems(work)
        assert await repo.find_by_id(closed.id) is None
        with pytest.raises(NotFound):
            await repo.get_many([open_.id, closed.id])
        assert [i.id for i in (await repo.page(10, 0)).items] == [open_.id]
        assert (await repo.page(10, 0)).total == 1
        assert [i.id for i in await repo.find_all(items.c.count == 1)] == [open_.id]
        assert await repo.count() == 1
        every = repo.ignoring("open")
        assert (await every.get_by_id(closed.id)).closed
        assert await every.count() == 2 and len(await every.get_many([open_.id, closed.id])) == 2
        with pytest.raises(ValueError, match="no filter 'shut'"):
            repo.ignoring("shut")
