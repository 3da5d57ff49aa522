"""Whether and where a service traces (docs/observability.md#traces): `--otel-endpoint`, the
standard OTEL_* variables and their precedence, the switches that turn it off, and that a service
that does not trace never loads the OpenTelemetry SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loom.runtime.values.traces import exporting_provider
from loom.runtime.values.tracing import traces_endpoint

ROOT = Path(__file__).resolve().parents[2]
VARIABLES = (
    "LOOM_OTEL_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_TRACES_SAMPLER",
)


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("given", "env", "url"),
    [
        (None, {}, None),  # nothing configured: nothing traced
        ("http://c:4318", {}, "http://c:4318/v1/traces"),
        ("http://c:4318/", {}, "http://c:4318/v1/traces"),
        (None, {"LOOM_OTEL_ENDPOINT": "http://l:4318"}, "http://l:4318/v1/traces"),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://o:4318"}, "http://o:4318/v1/traces"),
        (
            None,
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/custom"},
            "http://t:9/custom",  # the whole URL, as the standard says
        ),
        (  # the command line wins over every variable
            "http://c:4318",
            {"LOOM_OTEL_ENDPOINT": "http://l:4318", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://o:1"},
            "http://c:4318/v1/traces",
        ),
        (  # the traces endpoint wins over the general one
            None,
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://o:1",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:2/x",
            },
            "http://t:2/x",
        ),
        ("http://c:4318", {"OTEL_TRACES_EXPORTER": "none"}, None),
        ("http://c:4318", {"OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_where_spans_go(
    given: str | None, env: dict[str, str], url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert traces_endpoint(given) == url


def test_the_exporting_provider_takes_the_standard_service_name_and_sampler(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    named = exporting_provider("http://127.0.0.1:1/v1/traces", "Orders")
    assert named.resource.attributes["service.name"] == "Orders"
    named.shutdown()
    monkeypatch.setenv("OTEL_SERVICE_NAME", "orders-eu")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    provider = exporting_provider("http://127.0.0.1:1/v1/traces", "Orders")
    try:
        assert provider.resource.attributes["service.name"] == "orders-eu"
        span = provider.get_tracer("t").start_span("x")
        assert not span.is_recording()  # the sampler the variable names
    finally:
        provider.shutdown()


SERVE_UNTRACED = """
import asyncio, sys, tempfile
from loom.testing import serve

async def main():
    with tempfile.TemporaryDirectory() as d:
        async with serve([sys.argv[1]], f"sqlite+aiosqlite:///{d}/t.db") as c:
            r = await c.post("/api/workflows/register_customer", json={"name": "Ada"})
            assert r.status_code == 200, r.text
            assert c.service.tracer is None
    loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter")))
    print(loaded)

asyncio.run(main())
"""


def test_a_service_that_does_not_trace_never_loads_the_sdk() -> None:
    env = {"PATH": "/usr/bin:/bin", "LOOM_LOG": "off"}
    done = subprocess.run(
        [sys.executable, "-c", SERVE_UNTRACED, str(ROOT / "examples/banking/banking.loom")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout
