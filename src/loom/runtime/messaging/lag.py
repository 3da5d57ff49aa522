"""The gauges of the events' way, read at scrape time (docs/observability.md#metrics): per
channel, the outbox's events not delivered yet and the age of the oldest of them (the lag), and
the dead letters (one query, on the outbox's status index); per consumer of a channel on a broker,
the messages it has not acked (one request to the broker each). Never per request."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from loom.runtime.messaging.brokers import Brokers
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.outbox import DEAD, PENDING, outbox
from loom.runtime.messaging.transports.base import TransportError
from loom.runtime.values import clock
from loom.runtime.values.metrics import Gauge, age_seconds

_BY_CHANNEL = (
    select(outbox.c.channel, outbox.c.status, func.count(), func.min(outbox.c.occurred_at))
    .where(outbox.c.status.in_((PENDING, DEAD)))
    .group_by(outbox.c.channel, outbox.c.status)
)


async def outbox_gauges(engine: AsyncEngine, channels: Sequence[Channel]) -> list[Gauge]:
    """`loom_outbox_pending{channel}`, `loom_outbox_oldest_age_seconds{channel}` (0 for every
    channel with nothing pending) and the events' `loom_dead_letters{kind="event"}`."""
    pending = Gauge(
        "loom_outbox_pending", "Events in the outbox not delivered yet, by channel.", ("channel",)
    )
    age = Gauge(
        "loom_outbox_oldest_age_seconds",
        "Age of the oldest event in the outbox not delivered yet (the lag), by channel.",
        ("channel",),
    )
    dead = Gauge("loom_dead_letters", "Dead letters waiting for a redrive, by kind.", ("kind",))
    for channel in channels:
        pending.values[(channel.name,)] = 0.0
        age.values[(channel.name,)] = 0.0
    dead.values[("event",)] = 0.0
    now = clock.now()
    async with engine.connect() as conn:
        rows = (await conn.execute(_BY_CHANNEL)).all()
    for name, status, count, oldest in rows:
        if status == PENDING:
            pending.values[(name,)] = float(count)
            age.values[(name,)] = age_seconds(now, oldest)
        else:
            dead.values[("event",)] += float(count)
    return [pending, age, dead]


async def broker_gauges(brokers: Brokers) -> list[Gauge]:
    """`loom_broker_pending{channel,consumer}`: for every consumer of every channel this
    deployable's brokers carry (its own and the other deployables' it publishes to), the messages
    not acked yet. It grows while a consumer is down, where the outbox's lag stays 0 (the relay
    handed the events to the broker). A broker that does not answer leaves its consumers out."""
    pending = Gauge(
        "loom_broker_pending",
        "Messages on a broker a consumer has not acked yet (delivered or not), by channel and "
        "consumer.",
        ("channel", "consumer"),
    )
    for link in brokers.links.values():
        if not link.ready:
            continue
        for stream in link.streams.values():
            for spec in stream.consumers:
                try:
                    count = await link.transport.pending(spec)
                except TransportError:
                    break  # the broker does not answer: its consumers are left out
                pending.values[(spec.channel, spec.name)] = float(count)
    return [pending]
