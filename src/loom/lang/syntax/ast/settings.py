"""The declarations made of `key: value` settings: channels, resources, deployables and channel
sources."""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang.diagnostics import Span


@dataclass(frozen=True, slots=True)
class Duration:
    """A single duration setting (`timeout: 2s`), in milliseconds."""

    ms: int


@dataclass(eq=False)
class ChannelSetting:
    """One `key: value` of a channel, a resource, a deployable or a channel source. `value` is a
    list of (possibly qualified) names with their spans, an int, a (min, max) pair of durations in
    milliseconds, or one `Duration`."""

    key: str
    key_span: Span
    value: list[tuple[str | None, str, Span]] | int | tuple[int, int] | Duration
    value_span: Span
    span: Span


@dataclass(eq=False)
class Channel:
    """`channel Name { carries: A, Ctx.B  retention: work  maxAttempts: 5  backoff: 1s .. 5m }`."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


@dataclass(eq=False)
class Resource:
    """`resource directory { kind: api  context: Directory  timeout: 2s  retries: 2 }`: a binding
    through which bodies call another context's command and query handlers."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


@dataclass(eq=False)
class Deployable:
    """`deployable Name { contexts: A, B }`: contexts that run together, in one service."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span


@dataclass(eq=False)
class ChannelSource:
    """`channelSource Name { kind: nats }`: a broker that channels name with `source: Name`."""

    name: str
    name_span: Span
    settings: list[ChannelSetting]
    span: Span
