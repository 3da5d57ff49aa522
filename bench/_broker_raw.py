"""bench/broker.py's physical floor: the same messages through raw nats-py, with JetStream's
durability but no HTTP, database, outbox or inbox (bench/_broker_ref.py is the reference that does
the same work as Loom's path; this is what the broker alone costs).

- The stream and consumer are a `work` channel's, created by `NatsTransport.ensure`: file
  storage, interest retention, the same duplicate window, a durable pull consumer with explicit
  acks and the same ack wait.
- The publisher (in the bench process): `publish_async`, pipelined, every publish ack awaited.
- The consumer, a process of its own as the receiving deployable is
  (`python -m bench._broker_raw NATS_URL STREAM DURABLE COUNT`): one bound pull subscription,
  batch fetches of 64, every message acked with `ack_sync` (the server confirms each ack, as
  Loom's consumer waits for its acks), the acks of one batch sent together. It prints `ready` once
  bound, then, after COUNT messages, the `time.monotonic()` of the last confirmed ack, and exits
  when its standard input closes (the bench reads its CPU time first).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any
from uuid import uuid4

import nats

from bench._serving import ROOT, Processes
from loom.model import messaging as wire
from loom.runtime import clock
from loom.runtime.messaging.transports.base import Message
from loom.runtime.transports import ConsumerSpec, NatsTransport, StreamSpec
from loom.runtime.values.codec import encode

BATCH = 64
EVENT = "Sender.Pinged"
RAW_CHANNEL, RAW_CONSUMER = "Raw.Sent", "Raw.consumer"
RAW_STREAM, RAW_DURABLE = wire.stream_name(RAW_CHANNEL), wire.jetstream_durable(RAW_CONSUMER)
WAIT = 120.0  # seconds: the longest any one wait may take


async def consume(url: str, stream: str, durable: str, count: int) -> float:
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().pull_subscribe_bind(durable=durable, stream=stream)
        print("ready", flush=True)
        done = 0
        while done < count:
            try:
                msgs = await sub.fetch(BATCH, timeout=1.0)
            except TimeoutError:  # nats-py raises its own or asyncio's
                continue
            await asyncio.gather(*(m.ack_sync(5.0) for m in msgs))
            done += len(msgs)
        return time.monotonic()
    finally:
        await nc.close()


def raw_messages(
    main: Any, events: int, channel: str = RAW_CHANNEL
) -> list[tuple[str, bytes, dict[str, str]]]:
    """(subject, payload, headers) of `events` pings to `channel`, exactly as Loom's relay
    publishes them (each ping its key's first event)."""
    pinged = main.sender_domain.Pinged
    out = []
    for n in range(events):
        event_id = str(uuid4())
        event = pinged(ping=uuid4(), n=n)
        message = Message(
            event_id=event_id,
            event_type=EVENT,
            channel=channel,
            payload=encode(event),
            key=str(event.ping),
            correlation_id=event_id,
            causation_id=None,
            occurred_at=clock.now().isoformat(),
            model_revision=main.MODEL_REVISION,
            key_counts=wire.format_key_counts({EVENT: 1}),
        )
        headers = {"Nats-Msg-Id": event_id, **message.headers()}
        out.append((wire.event_subject(channel, EVENT), message.payload.encode(), headers))
    return out


async def ensure_channel(url: str, channel: str, consumer: str) -> None:
    """The stream of `channel` and its durable consumer `consumer`, created by
    `NatsTransport.ensure` itself: configured exactly as a channel of Loom's path (file storage,
    interest retention, the same windows and ack wait)."""
    transport = NatsTransport(url)
    await transport.connect()
    try:
        spec = ConsumerSpec(consumer, channel, (EVENT,))
        await transport.ensure(StreamSpec(channel, "work", [spec]))
    finally:
        await transport.close()


async def raw(
    url: str, nats_pid: int, messages: list[tuple[str, bytes, dict[str, str]]]
) -> tuple[float, dict[str, float]]:
    """Messages/s of raw nats-py: pipelined acked publishes, batch pull and acked consumption."""
    consumer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench._broker_raw",
        *(url, RAW_STREAM, RAW_DURABLE, str(len(messages))),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )
    assert consumer.stdin is not None and consumer.stdout is not None
    try:
        ready = await asyncio.wait_for(consumer.stdout.readline(), WAIT)
        if ready.strip() != b"ready":
            raise SystemExit(f"the raw consumer did not start: {ready!r}")
        processes = Processes(consumer=consumer.pid, nats=nats_pid)
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            cpu = processes.cpu()
            start = time.monotonic()
            acks = [
                await js.publish_async(subject, payload, headers=dict(headers))
                for subject, payload, headers in messages
            ]
            await asyncio.wait_for(asyncio.gather(*acks), WAIT)
        finally:
            await nc.close()
        last_ack = float(await asyncio.wait_for(consumer.stdout.readline(), WAIT))
        cpu_ms = Processes.per_event(cpu, processes.cpu(), len(messages))
        consumer.stdin.close()  # read its CPU time first: it exits on this
        await consumer.wait()
    finally:
        if consumer.returncode is None:
            consumer.kill()
            await consumer.wait()
    return len(messages) / (last_ack - start), cpu_ms


def main() -> None:
    url, stream, durable, count = sys.argv[1:5]
    print(repr(asyncio.run(consume(url, stream, durable, int(count)))), flush=True)
    sys.stdin.read()  # until the bench has read this process's CPU time


if __name__ == "__main__":
    main()
