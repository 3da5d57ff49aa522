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
transport_for_url(url, **opts)  the transport a URL names: nats://, redis:// or rediss://, memory://NAME

`import loom.runtime` does not import this module, nor the NATS and Redis clients it brings in.
"""

from typing import Any

from ._transport import (
    ConsumerSpec,
    MalformedMessage,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)
from ._transport_memory import MemoryBroker, MemoryTransport
from ._transport_nats import NatsTransport
from ._transport_redis import RedisTransport

# `memory://NAME`: one broker a name in the process, so the deployables of one process that name
# it talk to each other
_memory_brokers: dict[str, MemoryBroker] = {}
_SCHEMES = "nats://, redis://, rediss:// or memory://NAME"


def memory_broker(name: str) -> MemoryBroker:
    """The process-wide in-memory broker `memory://NAME` names (created on first use)."""
    return _memory_brokers.setdefault(name, MemoryBroker())


def transport_for_url(url: str, **options: Any) -> Transport:
    """The transport for a broker URL (not yet connected); `options` go to its constructor
    (`ack_wait`, `dedup_window`, `request_timeout`, ...). Raises ValueError for any other URL."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if sep and rest:
        if scheme == "nats":
            return NatsTransport(url, **options)
        if scheme in ("redis", "rediss"):
            return RedisTransport(url, **options)
        if scheme == "memory":
            return MemoryTransport(memory_broker(rest), **options)
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
