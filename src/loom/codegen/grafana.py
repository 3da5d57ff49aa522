"""A Grafana dashboard for a model's services (`loom dashboard`, docs/observability.md#dashboard):
the metrics every service exposes at `GET /metrics`, laid out after the model.

The first row is the service's own (requests, latency, deliveries, dead letters, the pool); then
a row per context, with a panel per durable channel it declares (its outbox lag and the events
waiting) and a panel per process workflow (its instances, running and completed). Every query
reads one Prometheus data source, chosen in the dashboard (`$datasource`), and may be narrowed to
some scrape jobs (`$job`). The output is deterministic: the same model gives the same file.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from loom.model import ir
from loom.model.telemetry import qualified

SCHEMA_VERSION = 39  # Grafana 10.4 and later read it
_WIDTH = 24  # Grafana's grid is 24 columns wide
_HEIGHT = 8
_JOB = 'job=~"$job"'


class _Layout:
    """Panels placed left to right, two to a line, each row starting a new line; ids from 1."""

    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self.y = 0
        self.x = 0

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append(
            {
                "id": len(self.panels) + 1,
                "type": "row",
                "title": title,
                "collapsed": False,
                "gridPos": {"x": 0, "y": self.y, "w": _WIDTH, "h": 1},
                "panels": [],
            }
        )
        self.y += 1

    def panel(self, title: str, unit: str, *queries: tuple[str, str]) -> None:
        width = _WIDTH // 2
        if self.x + width > _WIDTH:
            self._newline()
        self.panels.append(
            {
                "id": len(self.panels) + 1,
                "type": "timeseries",
                "title": title,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"x": self.x, "y": self.y, "w": width, "h": _HEIGHT},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
                "targets": [
                    {
                        "refId": chr(ord("A") + i),
                        "datasource": {"type": "prometheus", "uid": "${datasource}"},
                        "expr": expr,
                        "legendFormat": legend,
                    }
                    for i, (expr, legend) in enumerate(queries)
                ],
            }
        )
        self.x += width

    def _newline(self) -> None:
        if self.x:
            self.y += _HEIGHT
            self.x = 0


def _service_row(layout: _Layout) -> None:
    layout.row("Service")
    layout.panel(
        "Requests per second",
        "reqps",
        (
            f"sum by (route, method, status) (rate(loom_http_requests_total{{{_JOB}}}[5m]))",
            "{{method}} {{route}} {{status}}",
        ),
    )
    layout.panel(
        "Request duration, 95th percentile",
        "s",
        (
            "histogram_quantile(0.95, sum by (le, route, method) "
            f"(rate(loom_http_request_duration_seconds_bucket{{{_JOB}}}[5m])))",
            "{{method}} {{route}}",
        ),
    )
    layout.panel(
        "Deliveries per second",
        "ops",
        (
            f"sum by (reactor, outcome) (rate(loom_deliveries_total{{{_JOB}}}[5m]))",
            "{{reactor}} {{outcome}}",
        ),
    )
    layout.panel(
        "Dead letters",
        "short",
        (f"sum by (kind) (loom_dead_letters{{{_JOB}}})", "{{kind}}"),
        (f"sum(loom_timers_overdue_seconds{{{_JOB}}})", "timeouts overdue (s)"),
    )
    layout.panel(
        "Database pool",
        "short",
        (f"sum(loom_db_pool_in_use{{{_JOB}}})", "in use"),
        (f"sum(rate(loom_db_pool_waits_total{{{_JOB}}}[5m]))", "waits per second"),
    )
    layout.panel(
        "Relay publish duration, 95th percentile",
        "s",
        (
            "histogram_quantile(0.95, sum by (le) "
            f"(rate(loom_relay_publish_duration_seconds_bucket{{{_JOB}}}[5m])))",
            "publish",
        ),
    )


def _context_row(layout: _Layout, context: ir.Context) -> None:
    layout.row(f"Context {context.name}")
    for channel in context.channels:
        name = qualified(context.name, channel.name)
        label = f'channel="{name}", {_JOB}'
        layout.panel(
            f"Channel {name}: lag",
            "s",
            (f"max(loom_outbox_oldest_age_seconds{{{label}}})", "oldest waiting (s)"),
            (f"sum(loom_outbox_pending{{{label}}})", "events waiting"),
            # deployables carrying the channel each read it from the broker: one value each
            (f"max by (consumer) (loom_broker_pending{{{label}}})", "{{consumer}} not acked"),
        )
    for workflow in context.workflows:
        if workflow.process:
            name = qualified(context.name, workflow.name)
            layout.panel(
                f"Process {name}: instances",
                "short",
                (
                    f'sum by (state) (loom_process_instances{{process="{name}", {_JOB}}})',
                    "{{state}}",
                ),
            )


def dashboard(model: ir.Model) -> dict[str, Any]:
    """The Grafana dashboard of `model` (a JSON object)."""
    layout = _Layout()
    _service_row(layout)
    for context in model.contexts:
        _context_row(layout, context)
    names = ", ".join(c.name for c in model.contexts)
    uid = hashlib.sha256(f"loom:{names}".encode()).hexdigest()[:12]
    return {
        "title": f"Loom: {names}",
        "uid": f"loom-{uid}",
        "tags": ["loom"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": True,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                },
                {
                    "name": "job",
                    "label": "Job",
                    "type": "query",
                    "datasource": {"type": "prometheus", "uid": "${datasource}"},
                    "query": "label_values(loom_http_requests_total, job)",
                    "includeAll": True,
                    "multi": True,
                    "allValue": ".*",
                    "current": {"text": "All", "value": "$__all"},
                    "refresh": 2,
                },
            ]
        },
        "panels": layout.panels,
    }


def dashboard_json(model: ir.Model) -> str:
    """`dashboard(model)` as the file `loom dashboard` writes."""
    return json.dumps(dashboard(model), indent=2) + "\n"
