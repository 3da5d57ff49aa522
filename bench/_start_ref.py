"""bench/compiler.py's start reference: a plain FastAPI + SQLAlchemy app as an engineer writes it,
which imports nothing of Loom, nor anything a plain app would not (this file is all it runs).

    python bench/_start_ref.py PORT DATABASE_URL
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator


def serve_reference(port: int, url: str) -> None:
    """One table, created at startup, answered by a list route, served by `uvicorn.run` as `loom
    run` serves (log level info); the same pool as `loom run` is given (15, no overflow)."""
    import uvicorn
    from fastapi import FastAPI
    from pydantic import BaseModel
    from sqlalchemy import Column, Integer, MetaData, String, Table, Uuid, select
    from sqlalchemy.ext.asyncio import create_async_engine

    metadata = MetaData()
    accounts = Table(
        "accounts",
        metadata,
        Column("id", Uuid, primary_key=True),
        Column("number", String, nullable=False),
        Column("balance", Integer, nullable=False),
    )
    engine = create_async_engine(url, pool_size=15, max_overflow=0)

    class Account(BaseModel):
        id: str
        number: str
        balance: int

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        yield
        await engine.dispose()

    app = FastAPI(title="reference", lifespan=lifespan)

    # response_model, not the return annotation: under `from __future__ import annotations` a
    # class local to this function is not resolvable from its name
    @app.get("/accounts", response_model=list[Account])
    async def list_accounts() -> list[BaseModel]:
        async with engine.connect() as conn:
            rows = (await conn.execute(select(accounts))).all()
        return [Account(id=str(r.id), number=r.number, balance=r.balance) for r in rows]

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")


if __name__ == "__main__":
    serve_reference(int(sys.argv[1]), sys.argv[2])
