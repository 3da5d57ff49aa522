"""bench/broker.py's raw reference consumer, a process of its own as the receiving deployable is:
`python -m bench._broker_raw NATS_URL STREAM DURABLE COUNT`.

What a careful engineer writes with nats-py: one bound pull subscription, batch fetches of 64, and
every message of a batch acked with `ack_sync` (the server confirms each ack, as Loom's consumer
waits for its acks), the acks of one batch sent together. It prints `ready` once bound, then, after
COUNT messages, the `time.monotonic()` of the last confirmed ack.
"""

from __future__ import annotations

import asyncio
import sys
import time

import nats
import nats.errors

BATCH = 64


async def consume(url: str, stream: str, durable: str, count: int) -> float:
    nc = await nats.connect(url)
    try:
        sub = await nc.jetstream().pull_subscribe_bind(durable=durable, stream=stream)
        print("ready", flush=True)
        done = 0
        while done < count:
            try:
                msgs = await sub.fetch(BATCH, timeout=1.0)
            except nats.errors.TimeoutError:
                continue
            await asyncio.gather(*(m.ack_sync(5.0) for m in msgs))
            done += len(msgs)
        return time.monotonic()
    finally:
        await nc.close()


def main() -> None:
    url, stream, durable, count = sys.argv[1:5]
    print(repr(asyncio.run(consume(url, stream, durable, int(count)))), flush=True)


if __name__ == "__main__":
    main()
