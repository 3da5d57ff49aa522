"""The request body limit (default 1 MiB, `create_app(max_body_bytes=...)`, LOOM_MAX_BODY_BYTES):
a declared Content-Length over it is 413 at once, a chunked body that grows over it is cut off
with 413, both as `urn:loom:problem:payload-too-large` problems; nothing is stored
(tests/e2e/models/durable_autocommit.loom, on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loom.testing import ServiceClient, build_service, serve

MODEL = [Path(__file__).resolve().parent / "models" / "durable_autocommit.loom"]
TOO_LARGE = "urn:loom:problem:payload-too-large"
MIB = 1024 * 1024


@pytest.fixture
async def stock(database_url: str) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url) as client:
        yield client


def body_of(name: str) -> bytes:
    return b'{"name": "' + name.encode() + b'"}'


async def chunks(payload: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(payload), size):
        yield payload[start : start + size]


async def stored(c: ServiceClient) -> int:
    r = await c.get("/api/items")
    assert r.status_code == 200, r.text
    return int(r.json()["total"])


def assert_too_large(r: object, limit: int) -> None:
    assert r.status_code == 413, r.text  # type: ignore[attr-defined]
    assert r.headers["content-type"] == "application/problem+json"  # type: ignore[attr-defined]
    problem = r.json()  # type: ignore[attr-defined]
    assert problem["type"] == TOO_LARGE
    assert problem["status"] == 413
    assert problem["max_bytes"] == limit
    assert problem["instance"] == "/api/items"
    assert r.headers["x-correlation-id"]  # type: ignore[attr-defined]


async def test_a_10_mb_body_with_a_content_length_is_413_and_nothing_is_stored(
    stock: ServiceClient,
) -> None:
    r = await stock.post(
        "/api/items",
        content=body_of("x" * (10 * MIB)),
        headers={"content-type": "application/json"},
    )
    assert_too_large(r, MIB)
    assert await stored(stock) == 0


async def test_a_chunked_body_that_grows_over_the_limit_is_cut_off_with_413(
    stock: ServiceClient,
) -> None:
    r = await stock.post(
        "/api/items",
        content=chunks(body_of("x" * (2 * MIB))),
        headers={"content-type": "application/json"},
    )
    assert "content-length" not in r.request.headers
    assert_too_large(r, MIB)
    assert await stored(stock) == 0


async def test_a_body_under_the_limit_is_served(stock: ServiceClient) -> None:
    name = "y" * (MIB - 100)
    r = await stock.post(
        "/api/items",
        content=chunks(body_of(name)),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 201, r.text[:200]
    assert len(r.json()["name"]) == len(name)


async def test_the_limit_is_configured_by_loom_max_body_bytes(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_MAX_BODY_BYTES", "64")
    async with serve(MODEL, database_url) as c:
        r = await c.post("/api/items", json={"name": "short"})
        assert r.status_code == 201, r.text
        r = await c.post("/api/items", json={"name": "z" * 64})
        assert_too_large(r, 64)
        r = await c.post(
            "/api/items",
            content=chunks(body_of("z" * 64), 8),
            headers={"content-type": "application/json"},
        )
        assert_too_large(r, 64)
        assert await stored(c) == 1


def test_a_limit_that_is_not_a_byte_count_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    main = build_service(MODEL)
    monkeypatch.setenv("LOOM_MAX_BODY_BYTES", "1MB")
    with pytest.raises(ValueError, match="LOOM_MAX_BODY_BYTES must be a number of bytes"):
        main.build_app("sqlite+aiosqlite:///:memory:")
