from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from loom.runtime import Service

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
