"""Reading a service's `GET /metrics` the way Prometheus would: through `prometheus_client`'s own
parser of the text format (docs/observability.md#metrics)."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(client: Any, **headers: str) -> Samples:
    """Every sample of the service's /metrics, by (sample name, labels)."""
    r = await client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain"), r.headers
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float | None:
    """The value of one sample (None: not exposed)."""
    return samples.get((name, frozenset(labels.items())))


def matching(samples: Samples, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples of `name` whose labels include `labels`."""
    want = set(labels.items())
    return {k: v for (n, k), v in samples.items() if n == name and want <= k}
