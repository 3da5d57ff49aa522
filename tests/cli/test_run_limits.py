"""`loom run --max-body-bytes / --idempotency-ttl`: the flags reach the served app, and a bad value
stops the start with a sentence, never a traceback."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.liveserver import free_port, refused_start, running

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples/banking/banking.loom"


def _copy(tmp_path: Path) -> Path:
    model = tmp_path / "banking.loom"
    model.write_text(MODEL.read_text())
    return model


def test_run_applies_the_body_limit_flag(tmp_path: Path) -> None:
    model = _copy(tmp_path)
    with running(str(model), "--max-body-bytes", "64", port=free_port()) as base:
        small = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "Ada"})
        assert small.status_code == 200, small.text
        big = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "A" * 100})
        assert big.status_code == 413, big.text
        assert big.json()["type"] == "urn:loom:problem:payload-too-large"
        assert big.json()["max_bytes"] == 64


def test_run_applies_the_idempotency_ttl_flag(tmp_path: Path) -> None:
    model = _copy(tmp_path)
    with running(str(model), "--idempotency-ttl", "3600", port=free_port()) as base:
        key = {"Idempotency-Key": "cli-ttl-1"}
        url = f"{base}/api/workflows/register_customer"
        first = httpx.post(url, json={"name": "Ada"}, headers=key)
        again = httpx.post(url, json={"name": "Ada"}, headers=key)
        assert first.status_code == again.status_code == 200
        assert first.json() == again.json()
        assert again.headers["idempotent-replayed"] == "true"


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--max-body-bytes", "-1", "must be a number of bytes"),
        ("--idempotency-ttl", "-5", "lifetime must be positive"),
    ],
)
def test_run_refuses_a_bad_limit(tmp_path: Path, flag: str, value: str, says: str) -> None:
    stderr = refused_start(str(_copy(tmp_path)), flag, value)
    assert says in stderr, stderr


def test_run_refuses_a_bad_relay_lease(tmp_path: Path) -> None:
    model = tmp_path / "shop.loom"
    model.write_text((ROOT / "examples/shop/shop.loom").read_text())
    stderr = refused_start(str(model), "--relay-lease", "0")
    assert "LOOM_RELAY_LEASE must be a positive" in stderr, stderr
