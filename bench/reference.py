"""The hand-written reference service of the HTTP benchmarks (bench/transfer.py, bench/operation.py).

What a careful engineer would write by hand with FastAPI + SQLAlchemy 2 Core async for the banking
example's `transfer` workflow and `Account.deposit` operation, with nothing of Loom in it:

- statements built once, at import;
- a sized connection pool, kept (15, no overflow; BENCH_POOL_SIZE, BENCH_POOL_OVERFLOW), the
  generated service given the same (bench/_serving.py `Pool`);
- the same locking as the generated service: rows read `FOR UPDATE` on PostgreSQL; on SQLite,
  transactions begun with `BEGIN IMMEDIATE` (WAL, a busy timeout) and writers of this process
  queued on an `asyncio.Lock`, since SQLite has one writer at a time and its busy handler sleeps;
- the same version check (`UPDATE … WHERE id = ? AND version = ?`, a lost race is 409);
- the same rules: the withdrawal's precondition with the model's `fee` (1 for a savings account,
  so the account's kind is read), the deposit's state gate (`when !frozen`) and preconditions;
- the same answers: the source balance of a transfer, 204 for a deposit, Pydantic body models, and
  problem+json (RFC 9457) for every error.

Served by uvicorn: `uvicorn --factory bench.reference:build_app` with BENCH_DATABASE_URL set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import (
    BigInteger,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    Uuid,
    bindparam,
    event,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from starlette.responses import Response

metadata = MetaData()
accounts = Table(
    "reference_accounts",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("number", String, nullable=False),
    Column("balance", BigInteger, nullable=False),
    Column("kind", String, nullable=False),
    Column("frozen", Integer, nullable=False),
)

_c = accounts.c
# the columns the two routes read: the balance, the kind (a savings account's withdrawal pays a
# fee, the model's `fee`), the state gate's flag, the version
_BY_ID = select(_c.id, _c.version, _c.balance, _c.kind, _c.frozen).where(_c.id == bindparam("id"))
_BY_ID_LOCKED = _BY_ID.with_for_update()
_UPDATE = (
    update(accounts)
    .where(_c.id == bindparam("_id"), _c.version == bindparam("_version"))
    .values(balance=bindparam("_balance"), version=_c.version + 1)
)


class TransferIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_account: UUID = Field(alias="fromAccount")
    to_account: UUID = Field(alias="toAccount")
    amount: int


class DepositIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount: int


class ProblemError(Exception):
    def __init__(self, status: int, kind: str, detail: str) -> None:
        self.status, self.kind, self.detail = status, kind, detail


def _problem(request: Request, status: int, kind: str, detail: str, **extra: Any) -> Response:
    body = {
        "type": f"urn:ref:problem:{kind}",
        "title": kind,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
        **extra,
    }
    return Response(json.dumps(body), status, media_type="application/problem+json")


class Bank:
    """The database side: one engine, the statements above, the SQLite writer lock."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.sqlite = engine.dialect.name == "sqlite"
        self.by_id = _BY_ID if self.sqlite else _BY_ID_LOCKED
        self.writer = asyncio.Lock() if self.sqlite else None

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncConnection]:
        try:
            if self.writer is None:
                async with self.engine.begin() as conn:
                    yield conn
            else:
                async with self.writer, self.engine.begin() as conn:
                    yield conn
        except DBAPIError as exc:  # locked / serialization failure / deadlock: retry
            raise ProblemError(409, "concurrency-conflict", "concurrent update") from exc

    async def load(self, conn: AsyncConnection, id: UUID) -> Any:
        row = (await conn.execute(self.by_id, {"id": id})).first()
        if row is None:
            raise ProblemError(404, "not-found", f"account {id} does not exist")
        return row

    async def store(self, conn: AsyncConnection, row: Any, balance: int) -> None:
        params = {"_id": row.id, "_version": row.version, "_balance": balance}
        if (await conn.execute(_UPDATE, params)).rowcount != 1:
            raise ProblemError(409, "concurrency-conflict", f"account {row.id} changed")


def _pool() -> dict[str, int]:
    """A sized pool, kept: BENCH_POOL_SIZE connections (15), BENCH_POOL_OVERFLOW more under load
    (0), so no connection is opened and closed per request as SQLAlchemy's default (5 kept, 10
    more closed on return) does under 16 connections."""
    return {
        "pool_size": int(os.environ.get("BENCH_POOL_SIZE", "15")),
        "max_overflow": int(os.environ.get("BENCH_POOL_OVERFLOW", "0")),
    }


def _sqlite_engine(url: str) -> AsyncEngine:
    # The SQLAlchemy recipe for SQLite transactions begun by us, here as BEGIN IMMEDIATE.
    engine = create_async_engine(url, **_pool())

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in ("busy_timeout = 30000", "journal_mode = WAL", "synchronous = NORMAL"):
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def build_app(database_url: str | None = None) -> FastAPI:
    url = database_url or os.environ["BENCH_DATABASE_URL"]
    engine = (
        _sqlite_engine(url) if url.startswith("sqlite") else create_async_engine(url, **_pool())
    )
    bank = Bank(engine)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        yield
        await engine.dispose()

    app = FastAPI(lifespan=lifespan)

    @app.exception_handler(ProblemError)
    async def _on_problem(request: Request, exc: ProblemError) -> Response:
        return _problem(request, exc.status, exc.kind, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def _on_invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [{"path": ".".join(map(str, e["loc"])), "message": e["msg"]} for e in exc.errors()]
        return _problem(request, 422, "invalid-request", "invalid request", errors=errors)

    @app.post("/transfer")
    async def transfer(body: TransferIn) -> int:
        async with bank.transaction() as conn:
            # Two reads, like the workflow's two loads (one could fetch both rows at once).
            src = await bank.load(conn, body.from_account)
            dst = await bank.load(conn, body.to_account)
            fee = 1 if src.kind == "savings" else 0
            if body.amount <= 0 or src.balance < body.amount + fee:
                raise ProblemError(422, "precondition-failed", "insufficient funds")
            if dst.frozen:
                raise ProblemError(422, "state-gate-refused", "account frozen")
            balance = src.balance - body.amount - fee
            await bank.store(conn, src, balance)
            await bank.store(conn, dst, dst.balance + body.amount)
            return int(balance)

    @app.post("/accounts/{id}/deposit", status_code=204)
    async def deposit(id: UUID, body: DepositIn) -> None:
        async with bank.transaction() as conn:
            account = await bank.load(conn, id)
            if account.frozen:
                raise ProblemError(422, "state-gate-refused", "account frozen")
            if body.amount <= 0:
                raise ProblemError(422, "precondition-failed", "amount must be positive")
            await bank.store(conn, account, account.balance + body.amount)

    return app
