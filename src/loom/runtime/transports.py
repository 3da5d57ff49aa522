"""loom.runtime.transports — the brokers durable channels can ride (docs/events.md, "Brokers").

Transport                       the adapter contract (connect, ensure, publish, fetch, close)
Message                         one durable event on the wire: payload + Loom-* metadata
StreamSpec, ConsumerSpec        a channel as a broker holds it; one reaction's durable consumer
Received                        a fetched message: ack(), retry(delay), in_progress()
TransportError                  the broker is unreachable or refused; retried by the caller
MalformedMessage                a message with no Loom metadata (dead-lettered, never looped on)
MemoryBroker, MemoryTransport   the in-process test double (one broker shared by transports)
"""

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

__all__ = [
    "ConsumerSpec",
    "MalformedMessage",
    "MemoryBroker",
    "MemoryTransport",
    "Message",
    "Received",
    "StreamSpec",
    "Transport",
    "TransportError",
]
