"""How a durable event travels on a broker: its address, the stream that holds it, and the header
names beside its payload.

One definition, read by the runtime's transports (where they publish and consume), the AsyncAPI
document the generator writes (the addresses a contract names) and the tests. A channel is named
`<Context>.<Name>` (`Orders.Fulfilment`) and an event type `<Context>.<Event>`
(`Orders.OrderPlaced`), both of identifier characters and dots only.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, get_args

# the broker kinds a `channelSource` may name: each has an adapter that the transport conformance
# suite runs against a real server (tests/runtime/transports)
BrokerKind: TypeAlias = Literal["nats", "redis"]
BROKER_KINDS: Final[tuple[BrokerKind, ...]] = get_args(BrokerKind)

ADDRESS_PREFIX: Final = "loom"


def channel_address(channel: str) -> str:
    """The address of a channel on every broker: `loom.Orders.Fulfilment` (a NATS subject prefix;
    the AsyncAPI channel's address)."""
    return f"{ADDRESS_PREFIX}.{channel}"


def event_subject(channel: str, event_type: str) -> str:
    """The NATS subject one event type is published on within its channel:
    `loom.Orders.Fulfilment.Orders.OrderPlaced`; a consumer of one reaction filters on it."""
    return f"{channel_address(channel)}.{event_type}"


def stream_name(channel: str) -> str:
    """The JetStream stream holding a channel (stream names take no dots): `LOOM_Orders_Fulfilment`."""
    return f"{ADDRESS_PREFIX.upper()}_{channel.replace('.', '_')}"


def redis_stream_key(channel: str) -> str:
    """The Redis stream holding a channel: `loom:Orders.Fulfilment`."""
    return f"{ADDRESS_PREFIX}:{channel}"


# the metadata every message carries beside its payload (the event's fields as JSON): NATS
# headers, Redis stream entry fields. On NATS the event id is also `Nats-Msg-Id`, which is what
# JetStream deduplicates publishes on.
HEADER_EVENT_ID: Final = "Loom-Event-Id"
HEADER_EVENT_TYPE: Final = "Loom-Event-Type"
HEADER_KEY: Final = "Loom-Key"
HEADER_CORRELATION_ID: Final = "Loom-Correlation-Id"
HEADER_CAUSATION_ID: Final = "Loom-Causation-Id"
HEADER_OCCURRED_AT: Final = "Loom-Occurred-At"
HEADER_MODEL_REVISION: Final = "Loom-Model-Revision"
