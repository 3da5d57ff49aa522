"""Fixtures shared by the whole suite: the two databases every end-to-end test runs on.

`database_url` is parametrized over SQLite and PostgreSQL. Each test gets a database of its own: a
fresh SQLite file, or a fresh PostgreSQL database in the session's throwaway cluster.

PostgreSQL tests skip only when no server binaries exist *and* the run is not CI. Under CI (CI=true)
or with LOOM_REQUIRE_POSTGRES=1 a missing PostgreSQL is an error, so CI can never go green by
skipping them. The broker servers (`nats_server`, `redis_server`) likewise: CI=true or
LOOM_REQUIRE_BROKERS=1 turns a missing binary into a failure.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from tests.brokers import BrokerUnavailable, NatsServer, RedisServer, running_nats, running_redis
from tests.pgcluster import Cluster, PostgresUnavailable, running_cluster
from tests.tiers import apply_tiers

_REQUIRE_PG = os.environ.get("CI", "").lower() in {"1", "true", "yes"} or bool(
    os.environ.get("LOOM_REQUIRE_POSTGRES")
)
_REQUIRE_BROKERS = os.environ.get("CI", "").lower() in {"1", "true", "yes"} or bool(
    os.environ.get("LOOM_REQUIRE_BROKERS")
)
_db_counter = itertools.count()
BrokerT = TypeVar("BrokerT", NatsServer, RedisServer)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    try:
        with running_cluster() as cluster:
            yield cluster
    except PostgresUnavailable as exc:
        if _REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required for this run but could not start: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")


def _broker(
    start: Callable[[], contextlib.AbstractContextManager[BrokerT]], name: str
) -> Iterator[BrokerT]:
    try:
        with start() as server:
            yield server
    except BrokerUnavailable as exc:
        if _REQUIRE_BROKERS:
            pytest.fail(f"{name} is required for this run but could not start: {exc}")
        pytest.skip(f"{name} unavailable: {exc}")


@pytest.fixture(scope="session")
def nats_server() -> Iterator[NatsServer]:
    """A NATS server with JetStream on file storage for the session (tests/brokers.py)."""
    yield from _broker(running_nats, "NATS")


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """A Redis server with an fsynced append-only file for the session (tests/brokers.py)."""
    yield from _broker(running_redis, "Redis")


def create_pg_database(cluster: Cluster) -> str:
    import asyncio

    import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints

    name = f"loom_test_{os.getpid()}_{next(_db_counter)}"

    async def create() -> None:
        conn = await asyncpg.connect(cluster.dsn())
        try:
            await conn.execute(f'CREATE DATABASE "{name}"')
        finally:
            await conn.close()

    asyncio.run(create())
    return name


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'test.db'}"


@pytest.fixture
def postgres_url(pg_cluster: Cluster) -> str:
    return pg_cluster.url(create_pg_database(pg_cluster))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest) -> str:
    """One URL per database engine; tests using it run once on each."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("postgres_url"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-snapshots",
        action="store_true",
        default=False,
        help="rewrite golden files (generated code, rendered diagnostics) instead of comparing",
    )


@pytest.fixture
def update_snapshots(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-snapshots")) or bool(
        os.environ.get("LOOM_UPDATE_SNAPSHOTS")
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers' markers (tests/tiers.py)."""
    apply_tiers(items)
