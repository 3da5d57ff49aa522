"""The storage conformance suite's fixtures: one `Backend` a database adapter (SQLite, PostgreSQL),
each test on a fresh, empty database of its own.

Every test of the suite runs once per backend, through the runtime's own APIs (repositories, units
of work, the relay, the scheduler, the process store, `Idempotency-Key` requests): what one
adapter passes, every adapter must. A new adapter (say MySQL) is one more `Backend` subclass that
makes a fresh database (`fresh`), and its kind in `KINDS`.

The suite overrides `database_url` with the backend's, so the runtime sample's `app`, `client` and
`service` fixtures (tests/runtime/conftest.py) serve on it too."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData

from loom.runtime import Service
from tests.conftest import create_pg_database
from tests.pgcluster import Cluster


class Backend:
    """A fresh database of one adapter, and the services a test opens on it (each one stands for
    a replica: its own engine and pool), disposed at the end of the test."""

    kind = ""

    @classmethod
    async def fresh(cls, request: pytest.FixtureRequest) -> Backend:
        """A backend on a new, empty database (`request`: the test's, for session fixtures)."""
        raise NotImplementedError

    def __init__(self, url: str) -> None:
        self.url = url
        self._open: list[Service] = []

    async def service(self, metadata: MetaData | None = None, **options: Any) -> Service:
        """A service on this database, its schema created (`options` as `Service.from_url`)."""
        service = Service.from_url(self.url, metadata or MetaData(), **options)
        self._open.append(service)
        await service.create_schema()
        return service

    async def replicas(self, n: int, **options: Any) -> list[Service]:
        """`n` services on this database, as `n` processes of one deployable would be."""
        return [await self.service(**options) for _ in range(n)]

    async def close(self) -> None:
        for service in reversed(self._open):
            await service.dispose()


class SqliteBackend(Backend):
    """A database file; its writers take turns (`BEGIN IMMEDIATE`, and a service's writer lock)."""

    kind = "sqlite"

    @classmethod
    async def fresh(cls, request: pytest.FixtureRequest) -> Backend:
        folder: Path = request.getfixturevalue("tmp_path")
        return cls(f"sqlite+aiosqlite:///{folder / 'storage.db'}")


class PostgresBackend(Backend):
    """A database of its own in the session's throwaway cluster (tests/pgcluster.py)."""

    kind = "postgres"

    @classmethod
    async def fresh(cls, request: pytest.FixtureRequest) -> Backend:
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        return cls(cluster.url(await asyncio.to_thread(create_pg_database, cluster)))


BACKENDS: dict[str, type[Backend]] = {b.kind: b for b in (SqliteBackend, PostgresBackend)}
KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=KINDS)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    made = await BACKENDS[request.param].fresh(request)
    yield made
    await made.close()


@pytest.fixture
def database_url(backend: Backend) -> str:
    return backend.url
