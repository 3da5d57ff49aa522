"""The shop (examples/shop) as three real `loom run --deployable` processes, each on its own
database, over a real broker: start them, kill -9 and restart them, place orders over HTTP, and
count afterwards what each database holds (the books of `ShopBooks`). Nothing here depends on
pytest, so a bench can drive the same topology.

The flow of one order (shop.loom): Orders stores it and emits OrderPlaced; Inventory reserves
(StockReserved); Payment charges (PaymentSucceeded, or PaymentFailed with `failPayment`); on a
failure Inventory releases (ReservationReleased) and Payment answers OrderCancelled; Orders ends
Paid or Cancelled. So per order: one Reservation (released iff it fails), one Charge (ok iff it
does not fail), and per consumer exactly one inbox row per event of the type it consumes."""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import nats
import redis.asyncio as aioredis
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import create_async_engine

from loom.runtime.messaging.outbox import TIMEOUT, inbox

from .servers import EXAMPLES, Server, copy_model, get_all, outbox_counts

SHOP_FILES = (EXAMPLES / "shop/shop.loom", EXAMPLES / "shop/deployables.loom")
DEPLOYABLES = ("Orders", "Inventory", "Payment")
# The events of one order, by the order's failPayment: what each consumer must have seen once.
EVENTS = {
    False: ("Orders.OrderPlaced", "Inventory.StockReserved", "Payment.PaymentSucceeded"),
    True: (
        "Orders.OrderPlaced",
        "Inventory.StockReserved",
        "Payment.PaymentFailed",
        "Inventory.ReservationReleased",
        "Payment.OrderCancelled",
    ),
}
# Every durable consumer of the shop, by the deployable whose inbox it writes: a consumer that
# applied nothing has no inbox row to be found by, yet it may owe some.
CONSUMERS = {
    "Orders": (
        *(f"Orders.settleOrder.on(Payment.{e})" for e in ("PaymentSucceeded", "OrderCancelled")),
        "Orders.PaymentDeadline.create(OrderPlaced)",
        *(f"Orders.PaymentDeadline.on(Payment.{e})" for e in ("PaymentSucceeded", "PaymentFailed")),
        "Orders.OrderProgress.on(OrderPlaced)",
        *(
            f"Orders.OrderProgress.on({e})"
            for e in (
                "Inventory.StockReserved",
                "Payment.PaymentSucceeded",
                "Payment.PaymentFailed",
                "Inventory.ReservationReleased",
                "Payment.OrderCancelled",
            )
        ),
    ),
    "Inventory": tuple(
        f"Inventory.reserveStock.on({e})"
        for e in ("Orders.OrderPlaced", "Payment.PaymentFailed", "Orders.PaymentTimedOut")
    ),
    "Payment": tuple(
        f"Payment.takePayment.on(Inventory.{e})" for e in ("StockReserved", "ReservationReleased")
    ),
}
# Ctx.workflow.on(Ctx.Event), or on(Event) for an event of its own context: what it consumes
_CONSUMED = re.compile(r"\(([\w.]+)\)$")


def shop_model(folder: Path, *, deadline: str | None = None) -> list[Path]:
    """The shop's two model files copied into `folder`; with `deadline` (e.g. "3s"), the payment
    deadline of 30 minutes replaced by it (the only change)."""
    files = copy_model(folder, list(SHOP_FILES))
    if deadline is not None:
        text = files[0].read_text()
        assert text.count("schedule payment after 30m") == 1
        files[0].write_text(text.replace("after 30m", f"after {deadline}"))
    return files


class Deployable(Server):
    """`loom run MODEL --deployable NAME --broker URL` on a port of its own, kept across
    restarts."""

    def __init__(
        self,
        model: Sequence[Path],
        database_url: str,
        deployable: str,
        broker: str,
        *,
        name: str | None = None,
        lease: float | None = None,
        log_dir: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        super().__init__(
            model,
            database_url,
            name=name or deployable.lower(),
            lease=lease,
            log_dir=log_dir,
            env=env,
        )
        self.deployable = deployable
        self.broker = broker

    def command(self) -> list[str]:
        return [*super().command(), "--deployable", self.deployable, "--broker", self.broker]

    def handled(self, handler: str) -> int:
        """How many messages this process (every start of it) applied for `handler`: its
        `event_handled` log lines (written at INFO)."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        tag = f'"handler": "{handler}"'
        return sum(1 for line in lines if '"event_handled"' in line and tag in line)


@dataclass
class Shop:
    """The three deployables (and any extra replica), each with its database URL."""

    orders: Deployable
    inventory: Deployable
    payment: Deployable
    replicas: list[Deployable] = field(default_factory=list)

    @classmethod
    def create(
        cls,
        model: Sequence[Path],
        databases: dict[str, str],
        broker: str,
        log_dir: Path,
        lease: float = 3.0,
        env: dict[str, str] | None = None,
    ) -> Shop:
        # a delivery the broker made but the consumer never got (cut by a kill) comes again
        # after the redelivery wait: short, so that the books wait for it, not for 30 s
        env = {
            "LOOM_LOG_LEVEL": "INFO",
            "LOOM_REDELIVERY_WAIT": str(REDELIVERY_WAIT),
            **(env or {}),
        }
        orders, inventory, payment = (
            Deployable(model, databases[d], d, broker, lease=lease, log_dir=log_dir, env=env)
            for d in DEPLOYABLES
        )
        return cls(orders, inventory, payment)

    @property
    def main(self) -> list[Deployable]:
        return [self.orders, self.inventory, self.payment]

    @property
    def all(self) -> list[Deployable]:
        return [*self.main, *self.replicas]

    async def start(self, *servers: Deployable) -> None:
        chosen = servers or tuple(self.main)
        for s in chosen:
            s.start()
        await asyncio.gather(*(s.wait_ready() for s in chosen))

    async def restart(self, server: Deployable) -> None:
        """kill -9, then start again on the same port and database."""
        server.kill()
        server.start()
        await server.wait_ready()

    def stop(self) -> None:
        for s in self.all:
            s.stop()


async def place(client: httpx.AsyncClient, shop: Shop, fail: bool) -> str:
    body = {"sku": "lamp", "quantity": 1, "failPayment": fail}
    r = await client.post(f"{shop.orders.base}/api/workflows/place_order", json=body)
    assert r.status_code == 200, r.text
    return str(r.json())


def final_status(fail: bool) -> str:
    return "Cancelled" if fail else "Paid"


async def statuses(client: httpx.AsyncClient, shop: Shop) -> dict[str, str]:
    return {o["id"]: o["status"] for o in await get_all(client, shop.orders.base, "/api/orders")}


async def wait_terminal(
    client: httpx.AsyncClient, shop: Shop, placed: dict[str, bool], timeout: float
) -> float:
    """Until every placed order has its final status (or `timeout` seconds); answers how long."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        with_status = await statuses(client, shop)
        if all(with_status.get(o) == final_status(f) for o, f in placed.items()):
            break
        await asyncio.sleep(0.3)  # a measured wait: it answers how long, the caller judges
    return time.monotonic() - started


async def inbox_counts(database_url: str) -> Counter[str]:
    """consumer -> inbox rows of the reactions (not the fired timeouts the inbox records too),
    read straight from the database."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as conn:
            reactions = inbox.c.kind.is_distinct_from(TIMEOUT)
            q = select(inbox.c.consumer, func.count()).where(reactions).group_by(inbox.c.consumer)
            return Counter({str(c): int(n) for c, n in (await conn.execute(q)).all()})
    finally:
        await engine.dispose()


async def settle_outboxes(shop: Shop, timeout: float) -> dict[str, dict[str, int]]:
    """Each deployable's outbox counts, once none has a pending row (at most `timeout` s)."""
    started = time.monotonic()
    while True:
        counts = {s.deployable: await outbox_counts(s.database_url) for s in shop.main}
        if all(c["pending"] == 0 for c in counts.values()):
            return counts
        if time.monotonic() - started > timeout:
            return counts
        await asyncio.sleep(0.5)  # a measured wait: the counts say what is left


@dataclass
class ShopBooks:
    """What the three databases hold after a run, against the orders placed."""

    placed: dict[str, bool]  # order id -> failPayment
    status: dict[str, str]
    reservations: Counter[str]  # order -> rows
    released: set[str]
    charges: Counter[str]
    charged_ok: set[str]
    inbox: dict[str, Counter[str]]  # deployable -> consumer -> rows
    outbox: dict[str, dict[str, int]]
    dead_letters: dict[str, int]
    # orders whose PaymentDeadline is still armed although Payment answered: its answer would
    # have been applied before the deadline's own start (docs/events.md, "Proof: …": the relay
    # delivers to its own deployable's reactions before it publishes, so there must be none)
    armed: set[str] = field(default_factory=set)

    def expected_inbox(self, consumer: str) -> int:
        found = _CONSUMED.search(consumer)
        event = found[1] if found else ""
        if "." not in event:
            event = f"{consumer.split('.')[0]}.{event}"
        return sum(event in EVENTS[f] for f in self.placed.values())

    def inbox_off(self) -> dict[str, tuple[int, int]]:
        """consumer -> (rows, expected) wherever they differ."""
        found = {c: n for per in self.inbox.values() for c, n in per.items()}
        every = {c: found.get(c, 0) for names in CONSUMERS.values() for c in names} | found
        return {
            c: (n, self.expected_inbox(c)) for c, n in every.items() if n != self.expected_inbox(c)
        }

    @property
    def not_terminal(self) -> set[str]:
        return {o for o, f in self.placed.items() if self.status.get(o) != final_status(f)}

    @property
    def lost(self) -> int:
        """Steps never applied: an order with no reservation or no charge, a failed order's
        reservation not released, inbox rows missing."""
        missing = sum(1 for o in self.placed if self.reservations[o] == 0)
        missing += sum(1 for o in self.placed if self.charges[o] == 0)
        missing += sum(1 for o, f in self.placed.items() if f and o not in self.released)
        off = self.inbox_off().values()
        return missing + sum(max(0, want - n) for n, want in off)

    @property
    def doubled(self) -> int:
        """Steps applied more than once, or applied when they must not be."""
        extra = sum(n - 1 for n in self.reservations.values() if n > 1)
        extra += sum(n - 1 for n in self.charges.values() if n > 1)
        extra += sum(1 for o, f in self.placed.items() if not f and o in self.released)
        extra += sum(1 for o, f in self.placed.items() if f == (o in self.charged_ok))
        off = self.inbox_off().values()
        return extra + sum(max(0, n - want) for n, want in off)

    def table(self, title: str) -> list[str]:
        n, fails = len(self.placed), sum(self.placed.values())
        pending = {d: c["pending"] for d, c in self.outbox.items()}
        consumers = sum(len(c) for c in self.inbox.values())
        rows = sum(sum(c.values()) for c in self.inbox.values())
        reservations, charges = sum(self.reservations.values()), sum(self.charges.values())
        return [
            title,
            f"  orders placed            {n} ({n - fails} paying, {fails} failing)",
            f"  terminal as expected     {n - len(self.not_terminal)}",
            f"  reservations / charges   {reservations} / {charges} "
            + f"(released {len(self.released)}, ok {len(self.charged_ok)})",
            f"  inbox rows               {rows} over {consumers} consumers, "
            + f"off expected: {len(self.inbox_off())}",
            f"  lost / doubled           {self.lost} / {self.doubled}",
            f"  outbox pending           {pending}",
            f"  dead letters             {self.dead_letters}",
            f"  deadlines left armed     {len(self.armed)} (an answer overtook the start)",
        ]

    def problems(self) -> list[str]:
        found = []
        if self.not_terminal:
            found.append(f"not terminal: {sorted(self.not_terminal)[:5]}")
        if self.lost or self.doubled:
            found.append(f"lost {self.lost}, doubled {self.doubled}: {self.inbox_off()}")
        if any(c["pending"] or c["dead"] for c in self.outbox.values()):
            found.append(f"outbox not drained: {self.outbox}")
        if any(self.dead_letters.values()):
            found.append(f"dead letters: {self.dead_letters}")
        if self.armed:
            found.append(f"deadlines left armed after the answer: {sorted(self.armed)[:5]}")
        return found


async def dead_letters(client: httpx.AsyncClient, server: Server) -> int:
    r = await client.get(f"{server.base}/api/admin/dead-letters", params={"limit": 1})
    r.raise_for_status()
    return int(r.json()["total"])


async def armed_deadlines(client: httpx.AsyncClient, shop: Shop, orders: Iterable[str]) -> set[str]:
    """The orders whose PaymentDeadline instance has not ended."""
    found = set()
    for order in orders:
        r = await client.get(f"{shop.orders.base}/api/workflows/payment_deadline/instances/{order}")
        r.raise_for_status()
        if not r.json()["ended"]:
            found.add(order)
    return found


REDELIVERY_WAIT = 4.0


async def broker_backlog(url: str) -> dict[str, tuple[int, int]]:
    """Per consumer of the broker at `url`: (messages not delivered yet, delivered and not acked).
    Both zero everywhere is the positive signal that the broker has nothing left to hand out."""
    found: dict[str, tuple[int, int]] = {}
    if url.startswith("nats://"):
        nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=0)
        try:
            js = nc.jetstream()
            for stream in await js.streams_info():
                name = stream.config.name or ""
                for c in await js.consumers_info(name):
                    found[f"{name}/{c.name}"] = (c.num_pending or 0, c.num_ack_pending or 0)
        finally:
            await nc.close()
    elif url.startswith("redis://"):
        client = aioredis.from_url(url)
        try:
            async for key in client.scan_iter(match="loom:*", _type="stream"):
                for g in await client.xinfo_groups(key):
                    name = f"{key.decode()}/{g['name'].decode()}"
                    found[name] = (int(g.get("lag") or 0), int(g["pending"]))
        finally:
            await client.aclose()
    return found


async def settle_broker(url: str, timeout: float) -> dict[str, tuple[int, int]]:
    """The broker's backlog once it is empty (at most `timeout` s): what it has not delivered or
    not seen acked, waited for rather than assumed gone after a quiet moment."""
    started = time.monotonic()
    while True:
        try:
            backlog = await broker_backlog(url)
        except (OSError, TimeoutError, nats.errors.Error):
            backlog = {"broker": (-1, -1)}  # restarting: ask again
        if all(v == (0, 0) for v in backlog.values()):
            return backlog
        if time.monotonic() - started > timeout:
            return backlog
        await asyncio.sleep(0.5)  # a measured wait: the backlog says what is left


async def _quiet_counts(shop: Shop, client: httpx.AsyncClient) -> tuple[object, ...]:
    inboxes = [sorted((await inbox_counts(s.database_url)).items()) for s in shop.main]
    return (*inboxes, *[await dead_letters(client, s) for s in shop.main])


async def books(shop: Shop, placed: dict[str, bool], *, settle_timeout: float) -> ShopBooks:
    """The books, once every outbox is drained, the broker has nothing left to deliver or see
    acked, and the inboxes and dead letters stay the same over 1.5 s (a consumer retrying in
    place writes neither until it succeeds or gives up)."""
    started = time.monotonic()
    await settle_outboxes(shop, settle_timeout)
    await settle_broker(shop.orders.broker, settle_timeout)
    async with httpx.AsyncClient(timeout=30) as c:
        seen = await _quiet_counts(shop, c)
        while time.monotonic() - started < settle_timeout:
            await asyncio.sleep(1.5)  # the quiet window the docstring names
            if (now := await _quiet_counts(shop, c)) == seen:
                break
            seen = now
        reservations = await get_all(c, shop.inventory.base, "/api/reservations")
        charges = await get_all(c, shop.payment.base, "/api/charges")
        return ShopBooks(
            placed=dict(placed),
            status=await statuses(c, shop),
            reservations=Counter(r["order"] for r in reservations),
            released={r["order"] for r in reservations if r["released"]},
            charges=Counter(ch["order"] for ch in charges),
            charged_ok={ch["order"] for ch in charges if ch["ok"]},
            inbox={s.deployable: await inbox_counts(s.database_url) for s in shop.main},
            outbox={s.deployable: await outbox_counts(s.database_url) for s in shop.main},
            dead_letters={s.deployable: await dead_letters(c, s) for s in shop.main},
            armed=await armed_deadlines(c, shop, placed),
        )


def mix(n: int, every: int = 3) -> Iterable[bool]:
    """failPayment for n orders: every `every`-th one fails."""
    return (i % every == every - 1 for i in range(n))
