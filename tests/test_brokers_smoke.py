"""The broker servers of tests/brokers.py: they answer, and a missing one fails a run that
requires brokers instead of skipping its tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nats
import redis.asyncio as aioredis

from tests.brokers import NatsServer, RedisServer

ROOT = Path(__file__).resolve().parents[1]


async def test_the_servers_answer_and_keep_data_over_a_crash(
    nats_server: NatsServer, redis_server: RedisServer
) -> None:
    nc = await nats.connect(nats_server.url)
    try:
        account = await nc.jetstream().account_info()  # fails unless JetStream is enabled
        assert account.limits.max_storage != 0
    finally:
        await nc.close()
    client = aioredis.Redis.from_url(redis_server.url)
    await client.set("loom:smoke", "kept")
    await client.aclose()
    redis_server.restart(kill=True)  # SIGKILL: only the fsynced append-only file is left
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        assert await client.get("loom:smoke") == b"kept"
        info = await client.info("server")
        major, minor = (int(x) for x in str(info["redis_version"]).split(".")[:2])
        assert (major, minor) >= (6, 2)  # XAUTOCLAIM
    finally:
        await client.aclose()


def _run_broker_test(**env: str) -> subprocess.CompletedProcess[str]:
    test = "tests/runtime/transports/test_conformance.py::test_publish_fetch_ack[nats]"
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "LOOM_REQUIRE_BROKERS"}}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env={**clean, "LOOM_NATS_SERVER": "/nonexistent/nats-server", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_missing_server_fails_a_run_that_requires_brokers() -> None:
    required = _run_broker_test(LOOM_REQUIRE_BROKERS="1")
    assert required.returncode == 1, required.stdout
    assert "NATS is required for this run but could not start" in required.stdout
    optional = _run_broker_test()
    assert optional.returncode == 0, optional.stdout
    assert "1 skipped" in optional.stdout and "NATS unavailable" in optional.stdout
