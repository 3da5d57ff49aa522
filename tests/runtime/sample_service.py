# ruff: noqa: B008  (FastAPI dependencies as defaults, as generated code writes them)
"""A hand-written service in exactly the shape the Loom code generator emits: domain, table,
repository, schemas, routes and workflows. The runtime tests drive it over HTTP."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import ClassVar, NewType
from uuid import UUID

from fastapi import APIRouter, Depends, FastAPI
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import BigInteger, Boolean, Column, Date, Integer, MetaData, String, Table, Uuid

from loom.runtime import (
    PROBLEM_RESPONSES,
    AggregateRoot,
    DomainEvent,
    Int64,
    LoomRoute,
    Page,
    PageLimit,
    PageOffset,
    Repository,
    Service,
    create_app,
    get_service,
    new_id,
    now,
    require,
)
from loom.runtime.types import DecimalText, JsonList, UtcDateTime

ItemId = NewType("ItemId", UUID)


# ---------------------------------------------------------------- domain.py
class Level(enum.StrEnum):
    """enum Level"""

    LOW = "Low"
    HIGH = "High"


@dataclass(frozen=True, slots=True)
class Incremented(DomainEvent):
    event_type: ClassVar[str] = "Incremented"
    item: ItemId
    by: int


@dataclass(frozen=True, slots=True)
class PairBumped(DomainEvent):
    event_type: ClassVar[str] = "PairBumped"
    first: ItemId
    second: ItemId


@dataclass(eq=False)
class Item(AggregateRoot):
    """aggregate Item"""

    name: str
    count: int = 0
    amount: Decimal = Decimal(0)
    due: date | None = None
    happened_at: datetime = field(default_factory=now)
    level: Level = Level.LOW
    maybe_level: Level | None = None
    note: str | None = None
    tags: list[str] = field(default_factory=list)
    amounts: list[Decimal] = field(default_factory=list)
    dates: list[date] = field(default_factory=list)
    stamps: list[datetime] = field(default_factory=list)
    refs: list[UUID] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)
    flags: list[bool] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    closed: bool = False
    id: ItemId = field(default_factory=lambda: ItemId(new_id()))

    def check_invariants(self) -> None:
        require(
            self.count <= 1_000_000,
            kind="invariant",
            rule="Item: invariant count <= 1000000",
            detail="an item never counts past a million",
        )

    def increment(self, by: int) -> None:
        require(
            by > 0,
            kind="precondition",
            rule="Item.increment: precondition by > 0",
            detail="by must be positive",
        )
        self.count += by
        self._raise_event(Incremented(item=self.id, by=by))
        self.check_invariants()

    def close(self) -> None:
        require(
            self.count == 0,
            kind="state-gate",
            rule="Item.close: when count == 0",
            detail="Item.close is not allowed in the current state (when count == 0)",
        )
        self.closed = True
        self.check_invariants()


# ---------------------------------------------------------------- tables.py
metadata = MetaData()
items = Table(
    "runtime_items",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("name", String, nullable=False),
    Column("count", BigInteger, nullable=False),
    Column("amount", DecimalText, nullable=False),
    Column("due", Date, nullable=True),
    Column("happened_at", UtcDateTime, nullable=False),
    Column("level", String, nullable=False),
    Column("maybe_level", String, nullable=True),
    Column("note", String, nullable=True),
    Column("tags", JsonList, nullable=False),
    Column("amounts", JsonList, nullable=False),
    Column("dates", JsonList, nullable=False),
    Column("stamps", JsonList, nullable=False),
    Column("refs", JsonList, nullable=False),
    Column("levels", JsonList, nullable=False),
    Column("flags", JsonList, nullable=False),
    Column("numbers", JsonList, nullable=False),
    Column("closed", Boolean, nullable=False),
)


# ---------------------------------------------------------------- repositories.py
class Items(Repository[Item]):
    """repository Items for Item"""

    aggregate = Item
    table = items


# ---------------------------------------------------------------- schemas.py
class ItemOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    id: UUID
    version: int
    name: str
    count: int
    amount: Decimal
    due: date | None
    happened_at: datetime = Field(alias="happenedAt")
    level: Level
    tags: list[str]

    @classmethod
    def from_aggregate(cls, item: Item) -> ItemOut:
        return cls(
            id=item.id,
            version=item._loom_version,
            name=item.name,
            count=item.count,
            amount=item.amount,
            due=item.due,
            happenedAt=item.happened_at,
            level=item.level,
            tags=item.tags,
        )


class ItemCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: str
    amount: Decimal = Decimal(0)
    count: Int64 = 0


class IncrementInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    by: Int64


class AmountInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    amount: Decimal


class PairInput(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    first: UUID
    second: UUID
    by: Int64


# ---------------------------------------------------------------- routes.py
router = APIRouter(route_class=LoomRoute, tags=["Runtime: Item"])


@router.post("/api/items", status_code=200, response_model=UUID, responses=PROBLEM_RESPONSES)
async def create_item(body: ItemCreate, service: Service = Depends(get_service)) -> UUID:
    async with service.autocommit() as work:
        item = Item(name=body.name, amount=body.amount, count=body.count)
        item.check_invariants()
        await Items(work).save(item)
    return item.id


@router.get("/api/items/{id}", response_model=ItemOut, responses=PROBLEM_RESPONSES)
async def get_item(id: UUID, service: Service = Depends(get_service)) -> ItemOut:
    async with service.autocommit() as work:
        item = await Items(work).get_by_id(id)
    return ItemOut.from_aggregate(item)


@router.get("/api/items", response_model=Page[ItemOut], responses=PROBLEM_RESPONSES)
async def list_items(
    limit: PageLimit = 50, offset: PageOffset = 0, service: Service = Depends(get_service)
) -> Page[ItemOut]:
    async with service.autocommit() as work:
        page = await Items(work).page(limit, offset)
    return page.map(ItemOut.from_aggregate)


@router.post("/api/items/{id}/increment", status_code=204, responses=PROBLEM_RESPONSES)
async def item_increment(
    id: UUID, body: IncrementInput, service: Service = Depends(get_service)
) -> None:
    async with service.transaction() as work:
        repo = Items(work)
        item = await repo.get_by_id(id)
        item.increment(body.by)
        await repo.save(item)


@router.post("/api/items/{id}/close", status_code=204, responses=PROBLEM_RESPONSES)
async def item_close(id: UUID, service: Service = Depends(get_service)) -> None:
    async with service.transaction() as work:
        repo = Items(work)
        item = await repo.get_by_id(id)
        item.close()
        await repo.save(item)


@router.post("/api/items/{id}/amount", status_code=204, responses=PROBLEM_RESPONSES)
async def item_amount(id: UUID, body: AmountInput, service: Service = Depends(get_service)) -> None:
    async with service.transaction() as work:
        repo = Items(work)
        item = await repo.get_by_id(id)
        item.amount = body.amount
        await repo.save(item)


@router.get("/api/boom", responses=PROBLEM_RESPONSES)
async def boom() -> None:
    raise RuntimeError("secret-internal-detail: password=hunter2")


# ---------------------------------------------------------------- workflows.py
workflows = APIRouter(route_class=LoomRoute, tags=["Runtime: workflows"])


@workflows.post(
    "/api/workflows/pair", status_code=200, response_model=int, responses=PROBLEM_RESPONSES
)
async def pair(body: PairInput, service: Service = Depends(get_service)) -> int:
    """transactional: all or nothing"""
    async with service.transaction() as work:
        repo = Items(work)
        first = await repo.get_by_id(body.first)
        second = await repo.get_by_id(body.second)
        first.increment(body.by)
        second.increment(body.by)
        work.emit(PairBumped(first=first.id, second=second.id))
        await repo.save(first)
        await repo.save(second)
        result = first.count
    return result


@workflows.post(
    "/api/workflows/loose_pair", status_code=200, response_model=int, responses=PROBLEM_RESPONSES
)
async def loose_pair(body: PairInput, service: Service = Depends(get_service)) -> int:
    """non-transactional: each save commits on its own"""
    async with service.autocommit() as work:
        repo = Items(work)
        first = await repo.get_by_id(body.first)
        second = await repo.get_by_id(body.second)
        first.increment(body.by)
        second.increment(body.by)
        work.emit(PairBumped(first=first.id, second=second.id))
        await repo.save(first)
        await repo.save(second)
        result = first.count
    return result


# ---------------------------------------------------------------- main.py
def build_app(database_url: str | None = None) -> FastAPI:
    return create_app(
        title="runtime-sample",
        metadata=metadata,
        routers=[router, workflows],
        database_url=database_url,
    )
