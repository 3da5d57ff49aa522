import asyncpg
import pytest


@pytest.mark.postgres
async def test_cluster_answers(postgres_url: str, pg_cluster) -> None:
    conn = await asyncpg.connect(pg_cluster.dsn(postgres_url.rsplit("/", 1)[1]))
    try:
        assert await conn.fetchval("select 1 + 1") == 2
        assert (await conn.fetchval("show server_version")).startswith("15")
    finally:
        await conn.close()
