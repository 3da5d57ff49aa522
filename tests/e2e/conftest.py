"""End-to-end fixtures: each example served in-process over HTTP, once per database engine."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loom.testing import ServiceClient, serve

ROOT = Path(__file__).resolve().parents[2]
BANKING = [ROOT / "examples/banking/banking.loom"]
SALES = [ROOT / "examples/sales/sales.loom", ROOT / "examples/sales/onboarding.loom"]


@pytest.fixture
async def bank(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(BANKING, database_url) as client:
        yield client


@pytest.fixture
async def sales(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(SALES, database_url) as client:
        yield client
