"""The hand-written reference for the transfer benchmark.

What a competent engineer would write by hand with FastAPI + SQLAlchemy 2 Core for the banking
example's `transfer` workflow: read both accounts, check the rules, update both rows with a version
check, all in one transaction, answer the source balance. No framework of ours is involved.
"""

from __future__ import annotations

from uuid import UUID

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import BigInteger, Column, Integer, MetaData, String, Table, Uuid, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

metadata = MetaData()
accounts = Table(
    "reference_accounts",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("version", Integer, nullable=False),
    Column("number", String, nullable=False),
    Column("balance", BigInteger, nullable=False),
    Column("frozen", Integer, nullable=False),
)


class TransferIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_account: UUID = Field(alias="fromAccount")
    to_account: UUID = Field(alias="toAccount")
    amount: int


_by_id = select(accounts.c.id, accounts.c.version, accounts.c.balance, accounts.c.frozen)


def build_reference_app(engine: AsyncEngine) -> FastAPI:
    app = FastAPI()

    @app.post("/transfer")
    async def transfer(body: TransferIn) -> int:
        try:
            return await _transfer(body)
        except DBAPIError as exc:  # locked / serialization failure / deadlock: the caller retries
            raise HTTPException(409, "concurrent update") from exc

    async def _transfer(body: TransferIn) -> int:
        async with engine.begin() as conn:
            # Two reads, like the workflow's two loads (one could fetch both rows at once).
            src = (await conn.execute(_by_id.where(accounts.c.id == body.from_account))).first()
            dst = (await conn.execute(_by_id.where(accounts.c.id == body.to_account))).first()
            if src is None or dst is None:
                raise HTTPException(404, "account not found")
            if body.amount <= 0 or src.balance < body.amount:
                raise HTTPException(422, "insufficient funds")
            if dst.frozen:
                raise HTTPException(422, "account frozen")
            for row, delta in ((src, -body.amount), (dst, body.amount)):
                result = await conn.execute(
                    update(accounts)
                    .where(accounts.c.id == row.id, accounts.c.version == row.version)
                    .values(balance=row.balance + delta, version=row.version + 1)
                )
                if result.rowcount != 1:
                    raise HTTPException(409, "concurrent update")
            return int(src.balance - body.amount)

    return app
