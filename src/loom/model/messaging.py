"""How a durable event travels on a broker: its address, the stream that holds it, and the header
names beside its payload.

One definition, read by the runtime's transports (where they publish and consume), the AsyncAPI
document the generator writes (the addresses a contract names) and the tests. A channel is named
`<Context>.<Name>` (`Orders.Fulfilment`) and an event type `<Context>.<Event>`
(`Orders.OrderPlaced`), both of identifier characters and dots only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
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
# the tenant a tenanted context's event was raised in; its consumers apply it in that tenant only
HEADER_TENANT: Final = "Loom-Tenant"
# how many events of each type of the channel its producer had committed for the message's key,
# this one included (`Orders.OrderPlaced=1,Orders.OrderNoted=3`): what a consumer reading some of
# those types must have applied before this one (docs/events.md, "What is guaranteed")
HEADER_KEY_COUNTS: Final = "Loom-Key-Counts"


def format_key_counts(counts: Mapping[str, int]) -> str:
    """The `Loom-Key-Counts` value of `counts` (event type -> count), in type order. Event types
    are identifier characters and dots, so `=` and `,` never occur in them."""
    return ",".join(f"{t}={n}" for t, n in sorted(counts.items()))


def parse_key_counts(text: str | None) -> dict[str, int] | None:
    """The counts of a `Loom-Key-Counts` value; None when there is none, or it does not parse
    (the message is then applied unordered, as one from before the header)."""
    if not text:
        return None
    out: dict[str, int] = {}
    for part in text.split(","):
        event_type, sep, count = part.partition("=")
        if not sep or not event_type or not count.isdigit():
            return None
        out[event_type] = int(count)
    return out


# JetStream names (streams, consumers) may not hold `.`, `*`, `>`, whitespace or path separators,
# and are directory names on file storage: at most 255 characters.
_DURABLE_KEEP = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_()")
_DURABLE_MAX = 255


def jetstream_durable(consumer: str) -> str:
    """The JetStream durable consumer name of a Loom consumer (docs/events.md "Names"):
    `Inventory.reserveStock.on(Orders.OrderPlaced)` → `Inventory-reserveStock-on(Orders-OrderPlaced)`.

    `.` becomes `-`; any other character outside letters, digits, `_`, `(` and `)` (a `-` or `~`
    included) becomes `~` and its code point in hex and `~`, so no two consumer names map to one
    durable. A name longer than JetStream allows keeps its start and ends in a digest of the whole."""
    out = []
    for char in consumer:
        if char in _DURABLE_KEEP:
            out.append(char)
        elif char == ".":
            out.append("-")
        else:
            out.append(f"~{ord(char):x}~")
    name = "".join(out)
    if len(name) <= _DURABLE_MAX:
        return name
    digest = hashlib.sha256(consumer.encode()).hexdigest()[:32]
    return f"{name[: _DURABLE_MAX - 33]}~{digest}"


# The Redis stream entry field holding the payload, beside the `Loom-*` header fields.
REDIS_PAYLOAD_FIELD: Final = "payload"


def redis_dedup_key(channel: str, event_id: str) -> str:
    """The Redis key remembering, for the dedup window, that an event id was published on a
    channel: `loom:Orders.Fulfilment:published:<event id>`."""
    return f"{redis_stream_key(channel)}:published:{event_id}"


def redis_retry_key(channel: str, consumer: str) -> str:
    """The Redis sorted set of one consumer's entries waiting for a `retry` delay (entry id → due
    time in ms): `loom:Orders.Fulfilment:retry:<consumer>`."""
    return f"{redis_stream_key(channel)}:retry:{consumer}"


# how the logs and a diagram name the broker of the channels that name no `source` (the one a
# bare `--broker URL` gives)
DEFAULT_BROKER: Final = "default"
