"""loom.runtime.transports — the brokers durable channels can ride (docs/brokers.md).

Transport                       the adapter contract (connect, ensure, publish, fetch, close)
Message                         one durable event on the wire: payload + Loom-* metadata
StreamSpec, ConsumerSpec        a channel as a broker holds it; one reaction's durable consumer
Received                        a fetched message: ack(), retry(delay), in_progress()
TransportError                  the broker is unreachable or refused; retried by the caller
MalformedMessage                a message with no Loom metadata (dead-lettered, never looped on)
MemoryBroker, MemoryTransport   the in-process test double (one broker shared by transports)
NatsTransport                   NATS JetStream (docs/brokers.md)
RedisTransport                  Redis Streams (docs/brokers.md)
transport_for_url(url, *, defaults, **opts)  the transport a URL names: nats://, redis:// or
                                rediss://, memory://NAME

`import loom.runtime` does not import this module, nor the NATS and Redis clients it brings in.
"""

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from loom.runtime.messaging.transports.base import (
    ConsumerSpec,
    MalformedMessage,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)
from loom.runtime.messaging.transports.memory import MemoryBroker, MemoryTransport
from loom.runtime.messaging.transports.nats import NatsTransport
from loom.runtime.messaging.transports.redis import RedisTransport

# `memory://NAME`: one broker a name in the process, so the deployables of one process that name
# it talk to each other
_memory_brokers: dict[str, MemoryBroker] = {}
_SCHEMES = "nats://, redis://, rediss:// or memory://NAME"


def memory_broker(name: str) -> MemoryBroker:
    """The process-wide in-memory broker `memory://NAME` names (created on first use)."""
    return _memory_brokers.setdefault(name, MemoryBroker())


# the settings a broker URL may carry in its query (`nats://h:4222?ack_wait=10`), in seconds: they
# are configuration like the URL itself, so `--broker` and LOOM_BROKER_<NAME> can set them
URL_SETTINGS = ("ack_wait", "dedup_window", "request_timeout")


def _url_settings(url: str) -> tuple[str, dict[str, float]]:
    """`url` without Loom's settings, and the settings (any other query member stays: the
    client's own)."""
    parts = urlsplit(url)
    kept, found = [], {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in URL_SETTINGS:
            kept.append((key, value))
            continue
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not seconds > 0:
            raise ValueError(f"broker URL setting {key}={value!r}: expected a positive number")
        found[key] = seconds
    if not found:
        return url, {}
    return urlunsplit(parts._replace(query=urlencode(kept))), found


def _check_servers(url: str, default_port: int) -> None:
    """Refuse a host or port a client would only fail on later, inside its connect loop (an
    `AssertionError` or a `ValueError` each attempt, never a start-up refusal)."""
    scheme, _, rest = url.partition("://")
    # NATS takes several servers, comma-separated (a cluster); each one is checked
    for one in rest.split(",") if scheme.lower() == "nats" else [rest]:
        parts = urlsplit(f"{scheme}://{one.strip()}")
        try:
            port = parts.port
        except ValueError:
            raw = parts.netloc.rpartition(":")[2]
            raise ValueError(
                f"broker URL {url!r}: port {raw!r} is not a port (a number from 1 to 65535)"
            ) from None
        if not parts.hostname:
            raise ValueError(
                f"broker URL {url!r}: no host (e.g. {scheme}://127.0.0.1:{default_port})"
            )
        if port == 0:
            raise ValueError(f"broker URL {url!r}: port 0 is not a port (a number from 1 to 65535)")
        if scheme.lower() != "nats":
            db = parts.path.strip("/")
            if db and not db.isdigit():
                raise ValueError(
                    f"broker URL {url!r}: the database {db!r} is not a number (redis://host:port/0)"
                )


def transport_for_url(
    url: str, *, defaults: Mapping[str, float] | None = None, **options: Any
) -> Transport:
    """The transport for a broker URL (not yet connected); `options` go to its constructor
    (`ack_wait`, `dedup_window`, `request_timeout`, ...), and so do those the URL's query
    names (`URL_SETTINGS`, seconds; the arguments win) and, for a setting neither names,
    `defaults` (the service's own, e.g. its redelivery wait). Raises ValueError for any other
    URL."""
    url, settings = _url_settings(url)
    options = {**(defaults or {}), **settings, **options}
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if sep and rest:
        if scheme == "nats":
            _check_servers(url, 4222)
            return NatsTransport(url, **options)
        if scheme in ("redis", "rediss"):
            _check_servers(url, 6379)
            return RedisTransport(url, **options)
        if scheme == "memory":
            if "request_timeout" in settings:  # it sends no request: nothing to bound
                raise ValueError("broker URL setting request_timeout: memory:// takes none")
            return MemoryTransport(memory_broker(rest.partition("?")[0]), **options)
    raise ValueError(f"unsupported broker URL {url!r}: expected {_SCHEMES}")


__all__ = [
    "ConsumerSpec",
    "MalformedMessage",
    "MemoryBroker",
    "MemoryTransport",
    "Message",
    "NatsTransport",
    "Received",
    "RedisTransport",
    "StreamSpec",
    "Transport",
    "TransportError",
    "memory_broker",
    "transport_for_url",
]
