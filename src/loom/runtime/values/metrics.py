"""The service's own instruments (docs/observability.md#metrics): counters and histograms kept in
plain dictionaries, which the layers above increment (the edge per request, the relay per
publish, the event bus and the consumers per delivery, the idempotency store per replay, the pool
per wait).

Plain Python rather than `prometheus_client`'s classes: an increment is a dictionary update (no
lock, no import of the client at start-up), and `prometheus_client` is imported on the first
scrape only, by `http/metrics.py`, which turns these into its metric families beside the gauges
it reads from the database then. One `Metrics` per app: several services in one process (tests,
`loom up` in-process) count apart.

Every label set is bounded by the model: a route's template (never the raw path), a method of
HTTP's, a status, a channel's, a reactor's name.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# seconds: from a fast in-memory answer to a slow database round trip
DURATION_BUCKETS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

# the outcomes of one delivery of a durable event to one reactor
APPLIED = "applied"
SKIPPED_DUPLICATE = "skipped_duplicate"
RETRIED = "retried"
DEAD_LETTERED = "dead_lettered"


@dataclass(slots=True)
class Counter:
    name: str
    help: str
    labels: tuple[str, ...] = ()
    values: dict[tuple[str, ...], float] = field(default_factory=dict)

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount


@dataclass(slots=True)
class Series:
    """One label set of a histogram: the count in each bucket (not cumulative; the last one is
    +Inf), the sum of the values and their count."""

    buckets: list[int]
    sum: float = 0.0
    count: int = 0


@dataclass(slots=True)
class Histogram:
    name: str
    help: str
    labels: tuple[str, ...] = ()
    bounds: tuple[float, ...] = DURATION_BUCKETS
    series: dict[tuple[str, ...], Series] = field(default_factory=dict)

    def observe(self, value: float, *labels: str) -> None:
        found = self.series.get(labels)
        if found is None:
            found = self.series[labels] = Series([0] * (len(self.bounds) + 1))
        found.buckets[bisect_left(self.bounds, value)] += 1
        found.sum += value
        found.count += 1


class Metrics:
    """One app's instruments. `registry` is the `prometheus_client` registry `http/metrics.py`
    builds on the first scrape, with its collector (None until then)."""

    def __init__(self) -> None:
        self.http_requests = Counter(
            "loom_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ("route", "method", "status"),
        )
        self.http_duration = Histogram(
            "loom_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template and method.",
            ("route", "method"),
        )
        self.relay_publish = Histogram(
            "loom_relay_publish_duration_seconds",
            "Time the relay waited for the broker to take one batch of outbox events.",
        )
        self.deliveries = Counter(
            "loom_deliveries",
            "Deliveries of durable events to reactors, by channel, reactor and outcome "
            "(applied, skipped_duplicate, retried, dead_lettered).",
            ("channel", "reactor", "outcome"),
        )
        self.idempotency_replays = Counter(
            "loom_idempotency_replays",
            "Requests answered with the recorded answer of their Idempotency-Key.",
        )
        self.pool_waits = Counter(
            "loom_db_pool_waits",
            "Database connection checkouts that found every pooled connection in use and waited.",
        )
        self.registry: Any = None

    def instruments(self) -> Sequence[Counter | Histogram]:
        return (
            self.http_requests,
            self.http_duration,
            self.relay_publish,
            self.deliveries,
            self.idempotency_replays,
            self.pool_waits,
        )

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        """One HTTP request answered (`route`: its template)."""
        method = method if method in _METHODS else "other"
        self.http_requests.inc(route, method, str(status))
        self.http_duration.observe(seconds, route, method)

    def delivered(self, channel: str, reactor: str, outcome: str) -> None:
        self.deliveries.inc(channel, reactor, outcome)

    def failed(self, channel: str, errors: Sequence[str], outcome: str) -> None:
        """The reactors whose errors `errors` are (`EventBus.deliver`'s `<reactor>: <error>`)
        will have the event again (`RETRIED`) or not (`DEAD_LETTERED`)."""
        for error in errors:
            self.deliveries.inc(channel, error.split(": ", 1)[0], outcome)


@dataclass(slots=True)
class Gauge:
    """A value read at scrape time (a count, an age), by label set."""

    name: str
    help: str
    labels: tuple[str, ...] = ()
    values: dict[tuple[str, ...], float] = field(default_factory=dict)


def age_seconds(now: Any, oldest: Any) -> float:
    """Seconds from `oldest` (a datetime, or None: nothing) to `now`, never below 0."""
    return 0.0 if oldest is None else max(0.0, (now - oldest).total_seconds())
