# ruff: noqa: B008  (FastAPI dependencies as defaults, as generated code writes them)
"""A hand-written service in the shape the Loom code generator emits for events: two contexts
(Shop, Stock), events named "Context.Event", reactors and a correlated workflow subscribed by
name, durable channels, and `service.reaction()` units of work. The event tests drive it over HTTP.

The choreography: placing an order raises Shop.OrderPlaced; Shop.Fulfil starts an instance for
the order; Stock.ReserveStock reserves the product (a precondition refuses when stock is short)
and raises Stock.StockReserved; Shop.Fulfil routes that to the order's instance and marks the
order reserved, which raises Shop.OrderReserved (always in-process, to the Notify reactor).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any, ClassVar, NewType
from uuid import UUID

from fastapi import APIRouter, Depends, FastAPI
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Boolean, Column, Integer, MetaData, String, Table, Uuid

from loom.runtime import (
    PROBLEM_RESPONSES,
    AggregateRoot,
    Backoff,
    Channel,
    DomainEvent,
    Instances,
    Int64,
    LoomRoute,
    Repository,
    Service,
    create_app,
    get_service,
    log_unrouted,
    new_id,
    now,
    require,
)
from loom.runtime.types import DecimalText, JsonList, UtcDateTime

OrderId = NewType("OrderId", UUID)
ProductId = NewType("ProductId", UUID)
ReservationId = NewType("ReservationId", UUID)


# ---------------------------------------------------------------- shop/domain.py
class Priority(enum.StrEnum):
    NORMAL = "Normal"
    RUSH = "Rush"


class OrderStatus(enum.StrEnum):
    PENDING = "Pending"
    RESERVED = "Reserved"


@dataclass(frozen=True, kw_only=True)
class OrderPlaced(DomainEvent):
    """event OrderPlaced"""

    event_type: ClassVar[str] = "Shop.OrderPlaced"
    order: OrderId
    product: ProductId
    qty: int
    total: Decimal
    placed_at: datetime
    priority: Priority
    lines: list[Decimal] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class OrderReserved(DomainEvent):
    event_type: ClassVar[str] = "Shop.OrderReserved"
    order: OrderId


@dataclass(frozen=True, kw_only=True)
class BatchPlaced(DomainEvent):
    """workflow-level event of place_orders"""

    event_type: ClassVar[str] = "Shop.BatchPlaced"
    count: int


@dataclass(eq=False, kw_only=True)
class Order(AggregateRoot):
    product: ProductId
    qty: int
    total: Decimal
    priority: Priority = Priority.NORMAL
    status: OrderStatus = OrderStatus.PENDING
    id: OrderId = field(default_factory=lambda: OrderId(new_id()))

    @classmethod
    def create(cls, product: ProductId, qty: int, total: Decimal) -> Order:
        require(qty > 0, kind="precondition", rule="Order.create: qty > 0", detail="qty > 0")
        order = cls(product=product, qty=qty, total=total)
        order._raise_event(
            OrderPlaced(
                order=order.id,
                product=product,
                qty=qty,
                total=total,
                placed_at=now(),
                priority=order.priority,
                lines=[total, Decimal("0.00")],
            )
        )
        return order

    def mark_reserved(self) -> None:
        self.status = OrderStatus.RESERVED
        self._raise_event(OrderReserved(order=self.id))


@dataclass(kw_only=True)
class FulfilState:
    """workflow Fulfil state (correlated by order)"""

    order: OrderId
    reserved: bool = False


# ---------------------------------------------------------------- stock/domain.py
@dataclass(frozen=True, kw_only=True)
class StockReserved(DomainEvent):
    event_type: ClassVar[str] = "Stock.StockReserved"
    order: OrderId
    product: ProductId
    qty: int


@dataclass(eq=False, kw_only=True)
class Product(AggregateRoot):
    sku: str
    available: int = 0
    reserved: int = 0
    id: ProductId = field(default_factory=lambda: ProductId(new_id()))

    def reserve(self, order: OrderId, qty: int) -> None:
        require(
            self.available >= qty,
            kind="precondition",
            rule="Product.reserve: precondition available >= qty",
            detail="insufficient stock",
        )
        self.available -= qty
        self.reserved += qty
        self._raise_event(StockReserved(order=order, product=self.id, qty=qty))

    def restock(self, qty: int) -> None:
        self.available += qty


@dataclass(eq=False, kw_only=True)
class Reservation(AggregateRoot):
    order: OrderId
    product: ProductId
    qty: int
    id: ReservationId = field(default_factory=lambda: ReservationId(new_id()))


# ---------------------------------------------------------------- tables.py
metadata = MetaData()
orders = Table(
    "ev_orders",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("product", Uuid, nullable=False),
    Column("qty", Integer, nullable=False),
    Column("total", DecimalText, nullable=False),
    Column("priority", String, nullable=False),
    Column("status", String, nullable=False),
)
fulfil_instances = Table(
    "ev_fulfil_instances",
    metadata,
    Column("order", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("reserved", Boolean, nullable=False),
)
products = Table(
    "ev_products",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("sku", String, nullable=False),
    Column("available", Integer, nullable=False),
    Column("reserved", Integer, nullable=False),
)
reservations = Table(
    "ev_reservations",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("order", Uuid, nullable=False, unique=True),
    Column("product", Uuid, nullable=False),
    Column("qty", Integer, nullable=False),
)
_ = (JsonList, UtcDateTime)  # the generator imports the column types it may need


# ---------------------------------------------------------------- repositories.py
class Orders(Repository[Order]):
    aggregate = Order
    table = orders


class Products(Repository[Product]):
    aggregate = Product
    table = products


class Reservations(Repository[Reservation]):
    aggregate = Reservation
    table = reservations


class FulfilInstances(Instances[FulfilState]):
    state = FulfilState
    table = fulfil_instances
    key = "order"
    workflow = "Fulfil"


# ---------------------------------------------------------------- schemas.py
class ProductCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str
    available: Int64 = 0


class ProductOut(BaseModel):
    id: UUID
    sku: str
    available: int
    reserved: int


class Restock(BaseModel):
    model_config = ConfigDict(extra="forbid")
    qty: Int64


class OrderOut(BaseModel):
    id: UUID
    product: UUID
    qty: int
    total: Decimal
    status: OrderStatus


class PlaceOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    product: UUID
    qty: Int64
    total: Decimal


class PlaceOrders(BaseModel):
    model_config = ConfigDict(extra="forbid")
    product: UUID
    count: int = Field(ge=1, le=500)


# ---------------------------------------------------------------- routes.py
router = APIRouter(route_class=LoomRoute, tags=["Shop"])


@router.post("/api/products", response_model=UUID, responses=PROBLEM_RESPONSES)
async def create_product(body: ProductCreate, service: Service = Depends(get_service)) -> UUID:
    async with service.autocommit() as work:
        product = Product(sku=body.sku, available=body.available)
        await Products(work).save(product)
    return product.id


@router.get("/api/products/{id}", response_model=ProductOut, responses=PROBLEM_RESPONSES)
async def get_product(id: UUID, service: Service = Depends(get_service)) -> ProductOut:
    async with service.autocommit() as work:
        p = await Products(work).get_by_id(id)
    return ProductOut(id=p.id, sku=p.sku, available=p.available, reserved=p.reserved)


@router.post("/api/products/{id}/restock", status_code=204, responses=PROBLEM_RESPONSES)
async def product_restock(id: UUID, body: Restock, service: Service = Depends(get_service)) -> None:
    async with service.transaction() as work:
        repo = Products(work)
        product = await repo.get_by_id(id)
        product.restock(body.qty)
        await repo.save(product)


@router.get(
    "/api/products/{id}/reservations", response_model=list[UUID], responses=PROBLEM_RESPONSES
)
async def product_reservations(id: UUID, service: Service = Depends(get_service)) -> list[UUID]:
    """the orders holding a reservation of the product"""
    async with service.autocommit() as work:
        found = await Reservations(work).find_all(reservations.c.product == id)
    return [r.order for r in found]


@router.get("/api/orders/{id}", response_model=OrderOut, responses=PROBLEM_RESPONSES)
async def get_order(id: UUID, service: Service = Depends(get_service)) -> OrderOut:
    async with service.autocommit() as work:
        o = await Orders(work).get_by_id(id)
    return OrderOut(id=o.id, product=o.product, qty=o.qty, total=o.total, status=o.status)


# ---------------------------------------------------------------- workflows.py
workflows = APIRouter(route_class=LoomRoute, tags=["Shop: workflows"])


@workflows.post("/api/workflows/place_order", response_model=UUID, responses=PROBLEM_RESPONSES)
async def place_order(body: PlaceOrder, service: Service = Depends(get_service)) -> UUID:
    """workflow placeOrder transactional"""
    async with service.transaction() as work:
        order = Order.create(ProductId(body.product), body.qty, body.total)
        await Orders(work).save(order)
    return order.id


@workflows.post(
    "/api/workflows/place_order_loose", response_model=UUID, responses=PROBLEM_RESPONSES
)
async def place_order_loose(body: PlaceOrder, service: Service = Depends(get_service)) -> UUID:
    """workflow placeOrderLoose (non-transactional)"""
    async with service.autocommit() as work:
        order = Order.create(ProductId(body.product), body.qty, body.total)
        await Orders(work).save(order)
    return order.id


async def _place_orders(work: Any, body: PlaceOrders) -> list[UUID]:
    placed = [Order.create(ProductId(body.product), 1, Decimal("1.00")) for _ in range(body.count)]
    work.emit(BatchPlaced(count=body.count))
    for order in placed:
        await Orders(work).save(order)
    return [o.id for o in placed]


@workflows.post(
    "/api/workflows/place_orders", response_model=list[UUID], responses=PROBLEM_RESPONSES
)
async def place_orders(body: PlaceOrders, service: Service = Depends(get_service)) -> list[UUID]:
    """workflow placeOrders transactional: `count` orders of one unit each, then BatchPlaced"""
    async with service.transaction() as work:
        return await _place_orders(work, body)


@workflows.post(
    "/api/workflows/place_orders_loose", response_model=list[UUID], responses=PROBLEM_RESPONSES
)
async def place_orders_loose(
    body: PlaceOrders, service: Service = Depends(get_service)
) -> list[UUID]:
    """workflow placeOrdersLoose (non-transactional)"""
    async with service.autocommit() as work:
        return await _place_orders(work, body)


# Reactions, as generated: one function per `on` / event-triggered `create`, run as SYSTEM in
# `service.reaction()` (which records the inbox row of a durable delivery).
async def fulfil_start(service: Service, e: OrderPlaced) -> None:
    """workflow Fulfil: create(e: OrderPlaced) by e.order"""
    async with service.reaction() as work:
        store = FulfilInstances(work)
        instance = await store.bind(e.order)
        await store.save(instance)


async def fulfil_on_stock_reserved(service: Service, e: StockReserved) -> None:
    """workflow Fulfil: on(e: StockReserved) by e.order"""
    async with service.reaction() as work:
        store = FulfilInstances(work)
        instance = await store.find(e.order)
        if instance is None:
            log_unrouted("Stock.StockReserved", "Shop.Fulfil.on_stock_reserved")
            return
        repo = Orders(work)
        order = await repo.get_by_id(e.order)
        order.mark_reserved()
        instance.reserved = True
        await repo.save(order)
        await store.save(instance)


async def reserve_stock(service: Service, e: OrderPlaced) -> None:
    """workflow ReserveStock (context Stock): create(e: OrderPlaced) — a reservation, then the
    product; fresh aggregates are saved first"""
    async with service.reaction() as work:
        product = await Products(work).get_by_id(e.product)
        reservation = Reservation(order=e.order, product=e.product, qty=e.qty)
        product.reserve(e.order, e.qty)
        await Reservations(work).save(reservation)
        await Products(work).save(product)


NOTIFIED: list[OrderId] = []  # what the Notify reactor saw (tests clear it)


async def notify(service: Service, e: OrderReserved) -> None:
    """workflow Notify: on(e: OrderReserved) — a side effect outside the database"""
    NOTIFIED.append(e.order)


def subscribe(service: Service) -> None:
    """main.py: wire every reaction by its consumer name (order matters: a starter before the
    reactions that route to its instance)."""
    events = service.events
    events.subscribe(OrderPlaced, partial(fulfil_start, service), name="Shop.Fulfil.start")
    events.subscribe(OrderPlaced, partial(reserve_stock, service), name="Stock.ReserveStock.start")
    events.subscribe(
        StockReserved,
        partial(fulfil_on_stock_reserved, service),
        name="Shop.Fulfil.on_stock_reserved",
    )
    events.subscribe(OrderReserved, partial(notify, service), name="Shop.Notify.on_order_reserved")


# A route outside LoomRoute that raises: only the middleware stands between it and a traceback.
plain = APIRouter()


@plain.get("/api/plain-boom")
async def plain_boom() -> None:
    raise RuntimeError("raised past every handler")


# ---------------------------------------------------------------- main.py
EVENT_TYPES: Sequence[type[DomainEvent]] = (
    OrderPlaced,
    OrderReserved,
    BatchPlaced,
    StockReserved,
)


def channels(max_attempts: int = 5, backoff: Backoff | None = None) -> list[Channel]:
    backoff = backoff or Backoff(initial=timedelta(seconds=1))
    return [
        Channel(
            "shop",
            ["Shop.OrderPlaced", "Stock.StockReserved"],
            max_attempts=max_attempts,
            backoff=backoff,
        ),
        Channel("audit", ["Shop.BatchPlaced"], retention="log"),
    ]


def build_app(
    database_url: str | None = None,
    *,
    durable: bool = True,
    relay: bool | None = False,
    max_attempts: int = 5,
    backoff: Backoff | None = None,
    relay_options: dict[str, Any] | None = None,
) -> FastAPI:
    """`durable=False`: the same service with no channel, every event in-process. The relay is
    off by default here so tests drive deliveries with `service.settle()`."""
    return create_app(
        title="events-sample",
        metadata=metadata,
        routers=[router, workflows, plain],
        database_url=database_url,
        channels=channels(max_attempts, backoff) if durable else (),
        event_types=EVENT_TYPES,
        subscribe=subscribe,
        relay=relay,
        relay_options=relay_options,
    )
