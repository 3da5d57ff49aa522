"""`transport_for_url`: the transport a broker URL names, and a clear error for any other URL;
and the broker clients stay out of `import loom.runtime`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from loom.runtime.messaging.broker_config import redelivery_wait, transports_from_environment
from loom.runtime.transports import (
    MemoryTransport,
    NatsTransport,
    RedisTransport,
    transport_for_url,
)


def test_each_scheme_names_its_transport_with_the_options_given() -> None:
    nats = transport_for_url("nats://127.0.0.1:4222", ack_wait=2.0, request_timeout=3.0)
    assert isinstance(nats, NatsTransport)
    assert (nats.url, nats.ack_wait, nats.request_timeout) == ("nats://127.0.0.1:4222", 2.0, 3.0)
    for url in ("redis://127.0.0.1:6379/0", "rediss://cache.example:6380/1"):
        redis = transport_for_url(url, dedup_window=10.0)
        assert isinstance(redis, RedisTransport)
        assert (redis.url, redis.dedup_window) == (url, 10.0)


def test_memory_urls_of_one_name_share_one_broker() -> None:
    a1, a2 = transport_for_url("memory://shop"), transport_for_url("MEMORY://shop")
    other = transport_for_url("memory://elsewhere")
    assert isinstance(a1, MemoryTransport) and isinstance(a2, MemoryTransport)
    assert isinstance(other, MemoryTransport)
    assert a1.broker is a2.broker
    assert other.broker is not a1.broker


@pytest.mark.parametrize("url", ["kafka://127.0.0.1:9092", "127.0.0.1:4222", "memory://", ""])
def test_any_other_url_is_refused_naming_the_schemes(url: str) -> None:
    with pytest.raises(ValueError, match=r"expected nats://, redis://, rediss:// or memory://NAME"):
        transport_for_url(url)


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        transport_for_url("nats://127.0.0.1:4222", ack_wait=0)
    with pytest.raises(TypeError):
        transport_for_url("redis://127.0.0.1", no_such_option=1)


def test_import_loom_runtime_loads_no_broker_client() -> None:
    probe = (
        "import sys, loom.runtime; print(sorted(m for m in ('nats', 'redis') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_url_may_carry_the_transport_settings() -> None:
    nats = transport_for_url("nats://127.0.0.1:4222?ack_wait=2.5&dedup_window=60")
    assert isinstance(nats, NatsTransport)
    assert (nats.url, nats.ack_wait, nats.dedup_window) == ("nats://127.0.0.1:4222", 2.5, 60.0)
    # the client's own query members stay in the URL; an argument wins over the URL
    redis = transport_for_url("redis://h:6379/0?ack_wait=5&socket_keepalive=1", ack_wait=7.0)
    assert isinstance(redis, RedisTransport)
    assert (redis.url, redis.ack_wait) == ("redis://h:6379/0?socket_keepalive=1", 7.0)
    memory = transport_for_url("memory://shop?ack_wait=1")
    assert isinstance(memory, MemoryTransport)
    assert memory.ack_wait == 1.0
    again = transport_for_url("memory://shop")
    assert isinstance(again, MemoryTransport) and memory.broker is again.broker
    with pytest.raises(ValueError, match="memory:// takes none"):
        transport_for_url("memory://shop?request_timeout=1")


def test_the_services_redelivery_wait_is_each_transports_unless_its_url_names_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # what `loom run --redelivery-wait 4` (LOOM_REDELIVERY_WAIT) gives the brokers of a service
    monkeypatch.setenv("LOOM_REDELIVERY_WAIT", "4")
    environ = {"LOOM_BROKER": "nats://n:4222", "LOOM_BROKER_LOG": "redis://r:6379/0?ack_wait=9"}
    found = transports_from_environment(environ, ["", "Log"], redelivery_wait())
    assert {source: t.ack_wait for source, t in found.items()} == {"": 4.0, "Log": 9.0}
    monkeypatch.delenv("LOOM_REDELIVERY_WAIT")
    assert redelivery_wait() is None
    assert transport_for_url("nats://n:4222", defaults={}).ack_wait == 30.0  # the default
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv("LOOM_REDELIVERY_WAIT", bad)
        with pytest.raises(ValueError, match="LOOM_REDELIVERY_WAIT must be a number of seconds"):
            redelivery_wait()


@pytest.mark.parametrize("query", ["ack_wait=0", "ack_wait=-1", "dedup_window=soon", "ack_wait="])
def test_a_bad_url_setting_is_refused_naming_it(query: str) -> None:
    with pytest.raises(ValueError, match=f"broker URL setting {query.split('=')[0]}="):
        transport_for_url(f"nats://127.0.0.1:4222?{query}")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("nats://127.0.0.1:99999", "port '99999' is not a port"),
        ("nats://127.0.0.1:notaport", "port 'notaport' is not a port"),
        ("nats://127.0.0.1:4222,127.0.0.1:0", "port 0 is not a port"),
        ("nats://:4222", "no host"),
        ("redis://127.0.0.1:99999/0", "port '99999' is not a port"),
        ("rediss://127.0.0.1:6379/zero", "the database 'zero' is not a number"),
    ],
)
def test_a_host_or_port_no_client_can_use_is_refused_before_connecting(
    url: str, message: str
) -> None:
    # the clients would accept these and fail inside their reconnect loops, never once
    with pytest.raises(ValueError, match=message):
        transport_for_url(url)
    for fine in ("nats://127.0.0.1:4222,127.0.0.1:4223", "nats://[::1]:4222", "redis://h/1"):
        assert transport_for_url(fine) is not None
