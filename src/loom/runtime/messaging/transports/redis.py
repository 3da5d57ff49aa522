"""The Redis Streams transport (docs/brokers.md "Redis Streams").

A channel is one stream (`redis_stream_key`); an entry holds the `Loom-*` headers and the payload
(`REDIS_PAYLOAD_FIELD`) as fields. Every consumer is a consumer group, created from the stream's
start (id 0, MKSTREAM) by `ensure`; each transport instance reads as a group member of its own
name, so replicas share a group's entries. A group reads every event type of its channel: entries
of types it does not handle are acked as soon as they are fetched.

- publish: one script stores the entry and remembers the event id for `dedup_window`
  (`redis_dedup_key`), or does nothing when the id is remembered already; a batch is one pipeline
  of those scripts (one round trip, run in the order sent);
- fetch: first what is due again (entries idle in the group past `ack_wait`, whose fetcher died,
  and entries whose `retry` delay passed), then new entries (XREADGROUP, blocking in short steps so
  a retry falling due is not missed); `delivered` is the group's delivery count of the entry;
- retry(delay): the entry stays pending with this member, its due time in a sorted set
  (`redis_retry_key`); an entry found idle past `ack_wait` before its due time is passed over (and
  its idle time restarted), so a delay longer than `ack_wait` holds;
- `work` retention: entries every group acked are trimmed (XTRIM MINID below the oldest entry any
  group still has pending or undelivered) by `ensure` and, at most once a second a stream, after
  an ack; `log` keeps every entry.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.commands.core import AsyncScript

from loom.model import messaging as wire
from loom.runtime.messaging.channels import Retention
from loom.runtime.messaging.transports import redis_lua as lua
from loom.runtime.messaging.transports.base import (
    ConsumerSpec,
    MalformedMessage,
    Message,
    Received,
    StreamSpec,
    Transport,
    TransportError,
)

_TRIM_EVERY = 1.0  # s: the least time between two trims of one stream after acks
_BLOCK_STEP = 0.05  # s: the longest single XREADGROUP block (due retries are checked between)


def _text(value: bytes | str) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _id_order(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


class _RedisReceived(Received):
    def __init__(
        self,
        transport: RedisTransport,
        consumer: ConsumerSpec,
        entry_id: str,
        decoded: Message | MalformedMessage,
        delivered: int,
    ) -> None:
        self.decoded = decoded
        self.delivered = delivered
        self.entry_id = entry_id
        self._transport = transport
        self._consumer = consumer

    async def ack(self) -> None:
        await self._transport.settle(self._consumer, self.entry_id)

    async def retry(self, delay: float) -> None:
        await self._transport.run(
            lua.RETRY,
            [wire.redis_stream_key(self._consumer.channel), self._retry_key()],
            [self._consumer.name, self._transport.member, self.entry_id, _ms(max(delay, 0.0))],
        )

    async def in_progress(self) -> None:
        key = wire.redis_stream_key(self._consumer.channel)
        client = self._transport.client()
        try:
            await client.xclaim(
                key, self._consumer.name, self._transport.member, 0, [self.entry_id], justid=True
            )
        except redis.exceptions.RedisError as exc:
            raise TransportError(f"Redis XCLAIM failed: {exc}") from exc

    def _retry_key(self) -> str:
        return wire.redis_retry_key(self._consumer.channel, self._consumer.name)


def _ms(seconds: float) -> int:
    return max(int(seconds * 1000), 0)


class RedisTransport(Transport):
    """`url`: `redis://[user:password@]host:port/db` (`rediss://` for TLS). `request_timeout` (s)
    bounds every request, connecting included."""

    kind = "redis"

    def __init__(
        self,
        url: str,
        *,
        ack_wait: float = 30.0,
        dedup_window: float = 300.0,
        request_timeout: float = 5.0,
    ) -> None:
        super().__init__(ack_wait=ack_wait, dedup_window=dedup_window)
        if request_timeout <= 0:
            raise ValueError("request_timeout must be positive")
        self.url = url
        self.request_timeout = request_timeout
        # unique among every replica of every deployable reading a group
        self.member = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(4)}"
        self._client: aioredis.Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._retention: dict[str, Retention] = {}
        self._trimmed: dict[str, float] = {}

    async def connect(self) -> None:
        client = aioredis.Redis.from_url(
            self.url,
            socket_timeout=self.request_timeout + _BLOCK_STEP,
            socket_connect_timeout=self.request_timeout,
            retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), 2),
        )
        self._scripts = {
            script: client.register_script(script)
            for script in (lua.PUBLISH, lua.CLAIM, lua.RETRY, lua.TRIM)
        }
        self._client = client
        try:
            await client.ping()
        except redis.exceptions.RedisError as exc:
            await self.close()
            raise TransportError(f"cannot connect to Redis at {self.url}: {exc}") from exc

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def check(self) -> None:
        try:
            await self.client().ping()
        except redis.exceptions.RedisError as exc:
            raise TransportError(f"Redis at {self.url} is unreachable: {exc}") from exc

    def client(self) -> aioredis.Redis:
        if self._client is None:
            raise TransportError("the Redis transport is not connected: call connect() first")
        return self._client

    async def run(self, script: str, keys: list[str], args: list[str | int]) -> Any:
        """Run one of `messaging.transports.redis_lua`'s scripts (the server caches it, by its digest)."""
        self.client()
        try:
            return await self._scripts[script](keys=keys, args=args)
        except redis.exceptions.RedisError as exc:
            raise TransportError(f"Redis script failed: {exc}") from exc

    async def pending(self, spec: ConsumerSpec) -> int:
        """The group's entries not delivered yet (`lag`: of every event type of the channel,
        the ones the group skips unread included) and delivered unacked (`pending`)."""
        client = self.client()
        key = wire.redis_stream_key(spec.channel)
        try:
            groups = await client.xinfo_groups(key)
        except redis.exceptions.ResponseError:  # no such stream yet
            return 0
        except redis.exceptions.RedisError as exc:
            raise TransportError(f"cannot read group {spec.name}: {exc}") from exc
        for group in groups:
            name = group.get("name")
            if (name.decode() if isinstance(name, bytes) else name) == spec.name:
                return int(group.get("lag") or 0) + int(group.get("pending") or 0)
        return 0

    async def ensure(self, stream: StreamSpec) -> None:
        client = self.client()
        key = wire.redis_stream_key(stream.channel)
        self._retention[stream.channel] = stream.retention
        if stream.retention == "work":
            # before a new group starts at id 0: what every existing group acked is gone
            await self.run(lua.TRIM, [key], [])
        for spec in stream.consumers:
            try:
                await client.xgroup_create(key, spec.name, id="0", mkstream=True)
            except redis.exceptions.ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise TransportError(f"cannot create group {spec.name}: {exc}") from exc
            except redis.exceptions.RedisError as exc:
                raise TransportError(f"cannot create group {spec.name}: {exc}") from exc

    async def publish(self, message: Message) -> None:
        [failed] = await self.publish_many([message])
        if failed is not None:
            raise failed

    async def publish_many(self, messages: Sequence[Message]) -> list[TransportError | None]:
        """One pipeline (no transaction) of the publish script, one call a message: the server
        runs one connection's commands in the order sent, each script atomically; a script that
        fails fails alone."""
        script = self._scripts[lua.PUBLISH] if self._client is not None else None
        if script is None:
            return [TransportError("the Redis transport is not connected")] * len(messages)
        try:
            async with self.client().pipeline(transaction=False) as pipe:
                for message in messages:
                    await script(*self._publish_call(message), client=pipe)
                replies = await pipe.execute(raise_on_error=False)
        except redis.exceptions.RedisError as exc:
            return [TransportError(f"Redis publish failed: {exc}")] * len(messages)
        return [
            TransportError(f"Redis publish failed: {reply}")
            if isinstance(reply, Exception)
            else None
            for reply in replies
        ]

    def _publish_call(self, message: Message) -> tuple[list[str], list[str | int]]:
        """The publish script's keys and arguments for `message`."""
        fields: list[str | int] = []
        for name, value in (
            *message.headers().items(),
            (wire.REDIS_PAYLOAD_FIELD, message.payload),
        ):
            fields += [name, value]
        keys = [
            wire.redis_stream_key(message.channel),
            wire.redis_dedup_key(message.channel, message.event_id),
        ]
        return keys, [_ms(self.dedup_window), *fields]

    async def fetch(
        self, consumer: ConsumerSpec, *, batch: int = 64, timeout: float = 1.0
    ) -> list[Received]:
        key = wire.redis_stream_key(consumer.channel)
        deadline = time.monotonic() + timeout
        while True:
            again = await self.run(
                lua.CLAIM,
                [key, wire.redis_retry_key(consumer.channel, consumer.name)],
                [consumer.name, self.member, _ms(self.ack_wait), batch],
            )
            found: list[tuple[str, Any, int]] = [(_text(i), f, int(n)) for i, f, n in again]
            found.sort(key=lambda entry: _id_order(entry[0]))
            left = deadline - time.monotonic()
            block = None if found else _ms(min(max(left, 0.0), _BLOCK_STEP))
            found += await self._read_new(consumer, batch - len(found), block)
            out = await self._received(consumer, found)
            if out or time.monotonic() >= deadline:
                return out

    async def _read_new(
        self, consumer: ConsumerSpec, count: int, block: int | None
    ) -> list[tuple[str, Any, int]]:
        if count <= 0:
            return []
        key = wire.redis_stream_key(consumer.channel)
        try:
            reply = await self.client().xreadgroup(
                consumer.name, self.member, {key: ">"}, count=count, block=block or None
            )
        except redis.exceptions.ResponseError as exc:
            if "NOGROUP" in str(exc):
                raise TransportError(
                    f"no group {consumer.name} on {key}: ensure the channel first"
                ) from exc
            raise TransportError(f"Redis XREADGROUP failed: {exc}") from exc
        except redis.exceptions.RedisError as exc:
            raise TransportError(f"Redis XREADGROUP failed: {exc}") from exc
        streams: list[Any] = list(reply or [])
        return [(_text(i), fields, 1) for _, entries in streams for i, fields in entries]

    async def _received(
        self, consumer: ConsumerSpec, found: list[tuple[str, Any, int]]
    ) -> list[Received]:
        out: list[Received] = []
        others: list[str] = []
        for entry_id, raw, delivered in found:
            # XREADGROUP's reply is a mapping, a script's a flat field, value list
            flat: list[Any] = (
                [x for kv in raw.items() for x in kv] if isinstance(raw, dict) else raw
            )
            fields = {_text(k): v for k, v in zip(flat[::2], flat[1::2], strict=True)}
            payload = fields.pop(wire.REDIS_PAYLOAD_FIELD, b"")
            headers = {k: _text(v) for k, v in fields.items()}
            event_type = headers.get(wire.HEADER_EVENT_TYPE)
            if event_type is not None and event_type not in consumer.event_types:
                others.append(entry_id)  # not this consumer's: as good as done
                continue
            raw_payload = payload if isinstance(payload, bytes) else str(payload).encode()
            decoded = Message.decode(consumer.channel, headers, raw_payload)
            out.append(_RedisReceived(self, consumer, entry_id, decoded, delivered))
        if others:
            try:
                await self.client().xack(
                    wire.redis_stream_key(consumer.channel), consumer.name, *others
                )
            except redis.exceptions.RedisError as exc:
                raise TransportError(f"Redis XACK failed: {exc}") from exc
        return out

    async def settle(self, consumer: ConsumerSpec, entry_id: str) -> None:
        """Ack one entry for its group (and forget a retry it was waiting for)."""
        key = wire.redis_stream_key(consumer.channel)
        try:
            async with self.client().pipeline(transaction=True) as pipe:
                pipe.xack(key, consumer.name, entry_id)
                pipe.zrem(wire.redis_retry_key(consumer.channel, consumer.name), entry_id)
                await pipe.execute()
        except redis.exceptions.RedisError as exc:
            raise TransportError(f"Redis XACK failed: {exc}") from exc
        now = time.monotonic()
        if self._retention.get(consumer.channel) == "work" and (
            now - self._trimmed.get(consumer.channel, 0.0) >= _TRIM_EVERY
        ):
            self._trimmed[consumer.channel] = now
            await self.run(lua.TRIM, [key], [])
