"""bench/broker.py's hand-written reference: the Sender and the Receiver as a careful engineer
writes them with FastAPI, SQLAlchemy 2 Core async and nats-py, with the guarantees of Loom's path
and nothing of Loom imported. PostgreSQL only (`FOR UPDATE SKIP LOCKED`).

- Sender, `POST /ping {"n": …}`: the Ping row and its outbox row in the request's one transaction;
  after the commit the request wakes the relay (in process; it polls every second besides).
- Its relay: in one transaction, takes up to 100 outbox rows `FOR UPDATE SKIP LOCKED` (replicas
  never take the same row), publishes each with its `Nats-Msg-Id` (JetStream drops a duplicate of
  a row published twice), pipelined (`publish_async`), awaits every ack, deletes the rows, commits.
  A failed publish rolls back: the rows stay and are published again.
- Receiver: a durable pull consumer (batches of at most 64, at most 64 messages held, the
  consumer's `max_in_flight` and `batch` in Loom); each message in its own transaction writes the
  inbox row (`ON CONFLICT DO NOTHING`: a redelivery changes nothing more) and the Pong, and is
  acked after the commit, without awaiting the server's confirmation (as Loom's `ack_nowait`).

The stream and the consumer are created by the bench with `NatsTransport.ensure`, exactly as
Loom's channel's (file storage, interest retention, the same duplicate window and ack wait). The
engine's pool is the one Loom's side is given (BENCH_POOL_SIZE, BENCH_POOL_OVERFLOW). The timing
points are Loom's side's (bench/_broker_points.py), noted at the same places.

Configuration (environment): BENCH_DATABASE_URL, BENCH_NATS_URL, BENCH_UDP_PORT, BENCH_POOL_SIZE,
BENCH_POOL_OVERFLOW, BENCH_SUBJECT and BENCH_STREAM (the Sender's), BENCH_DURABLE (the
Receiver's), BENCH_RELAY=off (the Sender without its relay).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any
from uuid import UUID, uuid4

import nats
from fastapi import FastAPI
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from pydantic import BaseModel
from sqlalchemy import (
    BigInteger,
    Column,
    Identity,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Uuid,
    any_,
    bindparam,
    delete,
    func,
    insert,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bench._broker_points import Points

log = logging.getLogger("bench.reference")
BATCH = 100  # rows per claim, as Loom's relay
MAX_IN_FLIGHT = 64  # messages one consumer holds, as Loom's
POLL = 1.0  # seconds: the relay's fallback when nothing wakes it
ACK_TIMEOUT = 5.0  # seconds: the longest a publish ack may take (Loom's request_timeout)

metadata = MetaData()
pings = Table(
    "pings", metadata, Column("id", Uuid, primary_key=True), Column("n", Integer, nullable=False)
)
outbox = Table(
    "outbox",
    metadata,
    Column("seq", BigInteger, Identity(), primary_key=True),
    Column("msg_id", Uuid, nullable=False),
    Column("subject", String, nullable=False),
    Column("payload", LargeBinary, nullable=False),
)
inbox = Table("inbox", metadata, Column("msg_id", String, primary_key=True))
pongs = Table(
    "pongs",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("ping", Uuid, nullable=False),
    Column("n", Integer, nullable=False),
)

# statements built once
_INSERT_PING = insert(pings)
_INSERT_OUTBOX = insert(outbox)
_CLAIM = (
    select(outbox.c.seq, outbox.c.msg_id, outbox.c.subject, outbox.c.payload)
    .order_by(outbox.c.seq)
    .limit(BATCH)
    .with_for_update(skip_locked=True)
)
_DELETE = delete(outbox).where(outbox.c.seq == any_(bindparam("seqs", type_=ARRAY(BigInteger))))
_INBOX = pg_insert(inbox).on_conflict_do_nothing()
_INSERT_PONG = insert(pongs)
_COUNT_PONGS = select(func.count()).select_from(pongs)


class PingIn(BaseModel):
    n: int


def _engine() -> AsyncEngine:
    return create_async_engine(
        os.environ["BENCH_DATABASE_URL"],
        pool_size=int(os.environ["BENCH_POOL_SIZE"]),
        max_overflow=int(os.environ["BENCH_POOL_OVERFLOW"]),
    )


def _app(
    engine: AsyncEngine, start: Callable[[JetStreamContext], list[Coroutine[Any, Any, None]]]
) -> FastAPI:
    """The app whose lifespan creates the tables, connects to NATS and runs `start`'s loops."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        nc: Client = await nats.connect(os.environ["BENCH_NATS_URL"])
        tasks = [asyncio.create_task(loop) for loop in start(nc.jetstream())]
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await nc.close()
            await engine.dispose()

    return FastAPI(lifespan=lifespan)


class Relay:
    """Publishes the outbox's rows (see the module's docstring)."""

    def __init__(
        self, engine: AsyncEngine, js: JetStreamContext, stream: str, points: Points
    ) -> None:
        self.engine, self.js, self.stream, self.points = engine, js, stream, points
        self.woken = asyncio.Event()

    def wake(self) -> None:
        self.woken.set()

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), POLL)
            self.woken.clear()
            try:
                while await self.round() == BATCH:
                    pass
            except Exception:
                log.exception("relay round failed; retrying")
                await asyncio.sleep(POLL)

    async def round(self) -> int:
        """Publish one claim's rows; how many there were."""
        note = self.points.note
        began = time.monotonic()
        async with self.engine.begin() as conn:
            rows = (await conn.execute(_CLAIM)).all()
            if not rows:
                return 0
            claimed = time.monotonic()
            numbers = [json.loads(row.payload)["n"] for row in rows]
            publishing = time.monotonic()
            for n in numbers:
                note("w", n, began)
                note("k", n, claimed)
                note("p", n, publishing)
            acks = [
                await self.js.publish_async(
                    row.subject,
                    row.payload,
                    stream=self.stream,
                    headers={"Nats-Msg-Id": str(row.msg_id)},
                )
                for row in rows
            ]
            await asyncio.wait_for(asyncio.gather(*acks), ACK_TIMEOUT)
            acked = time.monotonic()
            for n in numbers:
                note("a", n, acked)
            await conn.execute(_DELETE, {"seqs": [row.seq for row in rows]})
        return len(rows)


def sender_app() -> FastAPI:
    engine = _engine()
    subject, stream = os.environ["BENCH_SUBJECT"], os.environ["BENCH_STREAM"]
    relay: Relay | None = None
    points = Points(last="a")

    def start(js: JetStreamContext) -> list[Coroutine[Any, Any, None]]:
        nonlocal relay
        relay = Relay(engine, js, stream, points)
        return [] if os.environ.get("BENCH_RELAY") == "off" else [relay.run()]

    app = _app(engine, start)

    @app.post("/ping")
    async def ping(body: PingIn) -> UUID:
        ping_id = uuid4()
        payload = json.dumps({"ping": str(ping_id), "n": body.n}).encode()
        async with engine.begin() as conn:
            await conn.execute(_INSERT_PING, {"id": ping_id, "n": body.n})
            await conn.execute(
                _INSERT_OUTBOX, {"msg_id": uuid4(), "subject": subject, "payload": payload}
            )
        points.note("c", body.n, time.monotonic())
        if relay is not None:
            relay.wake()
        return ping_id

    return app


def receiver_app() -> FastAPI:
    engine = _engine()
    stream, durable = os.environ["BENCH_STREAM"], os.environ["BENCH_DURABLE"]
    points = Points(last="d")

    async def apply(msg: Msg, event: dict[str, Any]) -> None:
        n = event["n"]
        points.note("s", n, time.monotonic())
        try:
            async with engine.begin() as conn:
                fresh = await conn.execute(_INBOX, {"msg_id": msg.header["Nats-Msg-Id"]})  # type: ignore[index]
                if fresh.rowcount == 1:
                    pong = {"id": uuid4(), "ping": UUID(event["ping"]), "n": n}
                    await conn.execute(_INSERT_PONG, pong)
        except Exception:
            log.exception("reaction failed; redelivered in a second")
            await msg.nak(delay=1.0)
            return
        points.note("d", n, time.monotonic())
        await msg.ack()

    async def consume(js: JetStreamContext) -> None:
        sub = await js.pull_subscribe_bind(durable=durable, stream=stream)
        held: set[asyncio.Task[None]] = set()
        while True:
            # a task can be done before its done callback has taken it out of `held`: counted
            # as held, it would make the batch below 0 (nats-py refuses it)
            held.difference_update([task for task in held if task.done()])
            if len(held) >= MAX_IN_FLIGHT:
                await asyncio.wait(held, return_when=asyncio.FIRST_COMPLETED)
                continue
            try:
                msgs = await sub.fetch(min(MAX_IN_FLIGHT - len(held), 64), timeout=1.0)
            except TimeoutError:  # nats-py raises its own or asyncio's
                continue
            except Exception:
                log.exception("fetch failed; retrying")
                await asyncio.sleep(POLL)
                continue
            fetched = time.monotonic()
            for msg in msgs:
                event = json.loads(msg.data)
                points.note("f", event["n"], fetched)
                task = asyncio.create_task(apply(msg, event))
                held.add(task)
                task.add_done_callback(held.discard)

    app = _app(engine, lambda js: [consume(js)])

    @app.get("/pongs")
    async def count() -> dict[str, int]:
        async with engine.connect() as conn:
            return {"total": int((await conn.execute(_COUNT_PONGS)).scalar_one())}

    return app
