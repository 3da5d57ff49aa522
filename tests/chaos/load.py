"""Sending requests under chaos and telling apart what a client can know about each one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

# What a client knows about a request it sent.
ACKNOWLEDGED = "acknowledged"  # a 2xx: the write is promised
REFUSED = "refused"  # a 4xx, or the connection was never made: nothing may be stored
UNKNOWN = "unknown"  # the connection broke or timed out after sending, or a 503
BROKEN = "broken"  # a 5xx other than 503: a defect, whatever was stored


@dataclass(frozen=True)
class Outcome:
    label: str  # "201", "409", "connect-error", "disconnected", "timeout", ...
    response: httpx.Response | None = None

    @property
    def kind(self) -> str:
        if self.response is None:
            return REFUSED if self.label == "connect-error" else UNKNOWN
        status = self.response.status_code
        if 200 <= status < 300:
            return ACKNOWLEDGED
        if status == 503:
            return UNKNOWN
        if status >= 500:
            return BROKEN
        return REFUSED


async def send(client: httpx.AsyncClient, method: str, url: str, **kw: Any) -> Outcome:
    try:
        r = await client.request(method, url, **kw)
    except httpx.ConnectError:  # no TCP connection: the server never saw the request
        return Outcome("connect-error")
    except httpx.TimeoutException:
        return Outcome("timeout")
    except httpx.TransportError as exc:  # the connection broke with the request sent
        return Outcome(f"disconnected:{type(exc).__name__}")
    return Outcome(str(r.status_code), r)


def client(timeout: float, connections: int = 100) -> httpx.AsyncClient:
    """A client with a bounded timeout on every phase: a hang shows as a `timeout` outcome."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


@dataclass
class Ledger:
    """Per key (a command's unique reference): what the client learnt about it."""

    kinds: dict[str, str] = field(default_factory=dict)
    labels: Counter[str] = field(default_factory=Counter)

    def note(self, key: str, outcome: Outcome) -> None:
        self.kinds[key] = outcome.kind
        self.labels[outcome.label] += 1

    def keys(self, kind: str) -> set[str]:
        return {k for k, v in self.kinds.items() if v == kind}

    @property
    def sent(self) -> int:
        return len(self.kinds)


def status_line(labels: Counter[str]) -> str:
    return ", ".join(f"{label}: {n}" for label, n in sorted(labels.items()))


def fivexx(labels: Iterable[str]) -> list[str]:
    return sorted(label for label in labels if label[:1] == "5")
