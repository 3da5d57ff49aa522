"""A save of a loaded aggregate writes only the columns that changed since it was loaded (or last
saved), under the same version check — and never misses a change: lists changed in place, a
Decimal given another scale, a value changed back after an earlier save. On every backend."""

from __future__ import annotations

from decimal import Decimal
from uuid import UUID

from sqlalchemy import select, update

from loom.runtime import Service

from ..sample_service import Item, Items, Level, items


async def saved(service: Service, **fields: object) -> Item:
    item = Item(name="changes", **fields)  # type: ignore[arg-type]
    async with service.autocommit() as work:
        await Items(work).save(item)
    return item


async def stored(service: Service, id: UUID) -> Item:
    async with service.autocommit() as work:
        return await Items(work).get_by_id(id)


async def test_a_save_leaves_the_columns_it_did_not_change(service: Service) -> None:
    item = await saved(service, note="before")
    loaded = await stored(service, item.id)
    async with service.engine.begin() as conn:  # written behind the service's back
        await conn.execute(update(items).where(items.c.id == item.id).values(note="elsewhere"))
    loaded.increment(2)
    async with service.autocommit() as work:
        await Items(work).save(loaded)
    async with service.engine.connect() as conn:
        row = (await conn.execute(select(items.c.count, items.c.note, items.c.version))).one()
    assert tuple(row) == (2, "elsewhere", 2)


async def test_changes_in_place_and_rescaled_decimals_are_written(service: Service) -> None:
    item = await saved(service, tags=["a"], amount=Decimal("1.5"), amounts=[Decimal("2.5")])
    async with service.transaction() as work:
        repo = Items(work)
        loaded = await repo.get_by_id(item.id)
        loaded.tags.append("b")
        loaded.amounts[0] = Decimal("2.50")
        loaded.amount = Decimal("1.50")  # equal, yet stored otherwise
        loaded.level = Level.HIGH
        await repo.save(loaded)
    again = await stored(service, item.id)
    assert again.tags == ["a", "b"]
    assert str(again.amount) == "1.50" and [str(a) for a in again.amounts] == ["2.50"]
    assert again.level is Level.HIGH and again._loom_version == 2


async def test_a_second_save_compares_with_the_first(service: Service) -> None:
    item = await saved(service, note="one")
    async with service.transaction() as work:
        repo = Items(work)
        loaded = await repo.get_by_id(item.id)
        loaded.note = "two"
        await repo.save(loaded)
        loaded.note = "one"  # back to what was loaded, but not to what the first save wrote
        await repo.save(loaded)
    again = await stored(service, item.id)
    assert again.note == "one" and again._loom_version == 3


async def test_an_aggregate_saved_unchanged_is_not_written(service: Service) -> None:
    # nothing changed and no event raised: no UPDATE, the version stays (docs/language.md, "When
    # things are saved"); a change in the same unit of work is written once, as version 2
    item = await saved(service)
    async with service.transaction() as work:
        repo = Items(work)
        await repo.save(await repo.get_by_id(item.id))
    assert (await stored(service, item.id))._loom_version == 1
    async with service.transaction() as work:
        repo = Items(work)
        loaded = await repo.get_by_id(item.id)
        await repo.save(loaded)
        loaded.note = "changed"
        await repo.save(loaded)
    again = await stored(service, item.id)
    assert again.note == "changed" and again._loom_version == 2


async def test_lists_left_alone_are_not_written(service: Service) -> None:
    item = await saved(service, tags=["a"], amounts=[Decimal("2.5")])
    loaded = await stored(service, item.id)
    loaded.tags = ["a"]  # a new list, equal to the one loaded: nothing to write either
    async with service.engine.begin() as conn:  # written behind the service's back
        await conn.execute(
            update(items).where(items.c.id == item.id).values(tags=["other"], amounts=[])
        )
    loaded.increment(1)
    async with service.autocommit() as work:
        await Items(work).save(loaded)
    again = await stored(service, item.id)
    assert again.tags == ["other"] and again.amounts == [] and again.count == 1
