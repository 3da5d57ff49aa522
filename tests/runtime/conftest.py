from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from loom.runtime import Service
from loom.runtime.messaging.outbox import runtime_metadata

from .sample_service import build_app


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[Any]:
    app = build_app(database_url)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as c:
        yield c


@pytest.fixture
def service(app: Any) -> Service:
    return app.state.loom


@contextlib.asynccontextmanager
async def runtime_tables(url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on `url` whose database has the runtime's own tables (outbox, inbox, key
    counts and progress, ...); disposed after."""
    engine = create_async_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(runtime_metadata.create_all)
    try:
        yield engine
    finally:
        await engine.dispose()
