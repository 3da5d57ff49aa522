import asyncpg  # type: ignore[import-untyped]  # asyncpg ships no type hints
import pytest

from tests.pgcluster import Cluster


@pytest.mark.postgres
async def test_cluster_answers(postgres_url: str, pg_cluster: Cluster) -> None:
    conn = await asyncpg.connect(pg_cluster.dsn(postgres_url.rsplit("/", 1)[1]))
    try:
        assert await conn.fetchval("select 1 + 1") == 2
        assert (await conn.fetchval("show server_version")).startswith("15")
    finally:
        await conn.close()
