"""`GET /metrics`: the app's metrics in the Prometheus text format (docs/observability.md#metrics).

The counters and histograms are the app's `Metrics` (`values/metrics.py`), counted as things
happen; the gauges that need the database (the outbox's lag, the timers, the process instances)
are read now, one small query each, and the pool's from the engine. `prometheus_client` is
imported on the first scrape, not at start-up: a registry of the app's own (`Metrics.registry`),
so several services in one process never share a series.

With authentication configured, the route needs the role `admin`, unless `public`
(`loom run --metrics-public`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from fastapi import FastAPI, Request
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.responses import Response

from loom.runtime.http.auth import require_admin
from loom.runtime.messaging.brokers import Brokers
from loom.runtime.messaging.channels import Channel
from loom.runtime.messaging.lag import broker_gauges, outbox_gauges
from loom.runtime.messaging.transports.base import TransportError
from loom.runtime.storage.pool_metrics import pool_gauges
from loom.runtime.values.logs import log_fact
from loom.runtime.values.metrics import Counter, Gauge, Histogram, Metrics

if TYPE_CHECKING:  # the processes load with a service that uses them
    from loom.runtime.processes.runner import ProcessRunner

METRICS_PATH = "/metrics"
SCRAPE_TIMEOUT = 2.0  # seconds the database gauges may take


class MetricsHost(Protocol):
    """What a scrape reads of the service: its engine, its channels, its processes."""

    @property
    def engine(self) -> AsyncEngine: ...

    @property
    def channels(self) -> Sequence[Channel]: ...

    @property
    def uses_processes(self) -> bool: ...

    @property
    def brokers(self) -> Brokers: ...

    @property
    def processes(self) -> ProcessRunner: ...


async def read_gauges(host: MetricsHost) -> list[Gauge]:
    """Every scrape-time gauge of the service, those of one name merged (the dead letters of
    events and of timeouts are one gauge). A database that does not answer (within
    `SCRAPE_TIMEOUT`) leaves its gauges out, logged, rather than fail the scrape: the request
    counters, its 503s among them, matter most then."""
    found = pool_gauges(host.engine)
    reads: list[Awaitable[list[Gauge]]] = []
    if host.channels:
        reads.append(outbox_gauges(host.engine, host.channels))
    if host.uses_processes:
        from loom.runtime.processes.gauges import process_gauges

        reads.append(process_gauges(host.engine, host.processes.tracked()))
    if host.brokers.links:
        reads.append(broker_gauges(host.brokers))
    for read in reads:
        try:
            async with asyncio.timeout(SCRAPE_TIMEOUT):
                found += await read
        except (SQLAlchemyError, OSError, TimeoutError, TransportError) as exc:
            log_fact("metrics_gauges_unread", logging.WARNING, {"error": str(exc).split("\n")[0]})
    merged: dict[str, Gauge] = {}
    for gauge in found:
        held = merged.setdefault(gauge.name, Gauge(gauge.name, gauge.help, gauge.labels))
        held.values.update(gauge.values)
    return list(merged.values())


class _Families:
    """The collector of one app's registry: its instruments, and the gauges of the scrape under
    way (set just before the registry is read, in the same step of the event loop)."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.gauges: list[Gauge] = []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import (
            CounterMetricFamily,
            GaugeMetricFamily,
            HistogramMetricFamily,
        )

        for instrument in self.metrics.instruments():
            if isinstance(instrument, Counter):
                counter = CounterMetricFamily(
                    instrument.name, instrument.help, labels=instrument.labels
                )
                for labels, value in sorted(instrument.values.items()):
                    counter.add_metric(labels, value)
                yield counter
            else:
                yield _histogram(HistogramMetricFamily, instrument)
        for gauge in self.gauges:
            family = GaugeMetricFamily(gauge.name, gauge.help, labels=gauge.labels)
            for labels, value in sorted(gauge.values.items()):
                family.add_metric(labels, value)
            yield family


def _histogram(family_class: Any, histogram: Histogram) -> Any:
    family = family_class(histogram.name, histogram.help, labels=histogram.labels)
    bounds = [*(f"{b:g}" for b in histogram.bounds), "+Inf"]
    for labels, series in sorted(histogram.series.items()):
        cumulative, total = [], 0
        for bound, count in zip(bounds, series.buckets, strict=True):
            total += count
            cumulative.append((bound, float(total)))
        family.add_metric(labels, cumulative, series.sum)
    return family


def exposition(metrics: Metrics, gauges: list[Gauge]) -> tuple[bytes, str]:
    """The text of a scrape, and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

    if metrics.registry is None:
        families = _Families(metrics)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(families)
        metrics.registry = (registry, families)
    registry, families = metrics.registry
    families.gauges = gauges
    try:
        return generate_latest(registry), CONTENT_TYPE_LATEST
    finally:
        families.gauges = []


def add_metrics_route(
    app: FastAPI,
    metrics: Metrics,
    host_of: Callable[[Request], MetricsHost | None],
    *,
    public: bool,
) -> None:
    """Mount `GET /metrics` (`public`: open to every caller even with authentication)."""

    async def scrape(request: Request) -> Response:
        if not public:
            require_admin(request)
        host = host_of(request)
        gauges = [] if host is None else await read_gauges(host)
        body, content_type = exposition(metrics, gauges)
        return Response(body, media_type=content_type)

    app.add_api_route(METRICS_PATH, scrape, methods=["GET"], include_in_schema=False)
