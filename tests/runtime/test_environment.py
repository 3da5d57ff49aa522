"""Numbers from the environment: LOOM_MAX_BODY_BYTES, LOOM_IDEMPOTENCY_TTL, LOOM_RELAY_LEASE and
LOOM_POOL_SIZE / _OVERFLOW / _TIMEOUT are read by one helper, and a bad value stops the start with an error naming the variable."""

from __future__ import annotations

from datetime import timedelta

import pytest

from loom.runtime.http.body_limit import resolve_max_body_bytes
from loom.runtime.http.idempotency import resolve_ttl
from loom.runtime.messaging.relay import resolve_relay_options
from loom.runtime.values.environment import pool_settings


def test_unset_or_blank_variables_leave_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOOM_MAX_BODY_BYTES", "LOOM_IDEMPOTENCY_TTL", "LOOM_RELAY_LEASE"):
        monkeypatch.setenv(name, "  ")
    for name in ("LOOM_POOL_SIZE", "LOOM_POOL_OVERFLOW", "LOOM_POOL_TIMEOUT"):
        monkeypatch.setenv(name, "")
    # a pool sized and kept: no connection opened and closed again under load
    assert pool_settings() == {"pool_size": 15, "max_overflow": 0, "pool_timeout": 30.0}
    assert resolve_max_body_bytes(None) == 1024 * 1024
    assert resolve_ttl(None) == timedelta(hours=24)
    assert resolve_relay_options(None) == {}


def test_good_values_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_MAX_BODY_BYTES", " 0 ")
    monkeypatch.setenv("LOOM_IDEMPOTENCY_TTL", "1.5")
    monkeypatch.setenv("LOOM_RELAY_LEASE", "4")
    monkeypatch.setenv("LOOM_POOL_SIZE", "2")
    monkeypatch.setenv("LOOM_POOL_OVERFLOW", "0")
    monkeypatch.setenv("LOOM_POOL_TIMEOUT", "0.5")
    assert pool_settings() == {"pool_size": 2, "max_overflow": 0, "pool_timeout": 0.5}
    assert resolve_max_body_bytes(None) == 0
    assert resolve_ttl(None) == timedelta(seconds=1.5)
    assert resolve_relay_options(None) == {"lease": timedelta(seconds=4)}
    # an explicit value wins over the variable
    assert resolve_max_body_bytes(10) == 10
    assert resolve_ttl(60) == timedelta(seconds=60)
    assert resolve_relay_options({"lease": timedelta(seconds=9)}) == {"lease": timedelta(seconds=9)}


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        (
            "LOOM_MAX_BODY_BYTES",
            "1MB",
            "LOOM_MAX_BODY_BYTES must be a number of bytes >= 0, not '1MB'",
        ),
        (
            "LOOM_MAX_BODY_BYTES",
            "-1",
            "LOOM_MAX_BODY_BYTES must be a number of bytes >= 0, not '-1'",
        ),
        ("LOOM_MAX_BODY_BYTES", "1.5", "LOOM_MAX_BODY_BYTES must be a number of bytes"),
        ("LOOM_IDEMPOTENCY_TTL", "a day", "LOOM_IDEMPOTENCY_TTL must be a number of seconds"),
        ("LOOM_IDEMPOTENCY_TTL", "-5", "lifetime must be positive), not '-5'"),
        ("LOOM_IDEMPOTENCY_TTL", "inf", "LOOM_IDEMPOTENCY_TTL must be a number of seconds"),
        ("LOOM_RELAY_LEASE", "0", "LOOM_RELAY_LEASE must be a positive number of seconds, not '0'"),
        ("LOOM_RELAY_LEASE", "nan", "LOOM_RELAY_LEASE must be a positive number of seconds"),
        ("LOOM_RELAY_LEASE", "1e400", "LOOM_RELAY_LEASE must be a positive number of seconds"),
        ("LOOM_POOL_SIZE", "0", "LOOM_POOL_SIZE must be a whole number >= 1, not '0'"),
        ("LOOM_POOL_SIZE", "2.5", "LOOM_POOL_SIZE must be a whole number >= 1, not '2.5'"),
        ("LOOM_POOL_OVERFLOW", "-1", "LOOM_POOL_OVERFLOW must be a whole number >= 0, not '-1'"),
        ("LOOM_POOL_TIMEOUT", "0", "LOOM_POOL_TIMEOUT must be a number of seconds > 0, not '0'"),
    ],
)
def test_a_bad_value_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    monkeypatch.setenv(name, value)
    resolve = {
        "LOOM_MAX_BODY_BYTES": lambda: resolve_max_body_bytes(None),
        "LOOM_IDEMPOTENCY_TTL": lambda: resolve_ttl(None),
        "LOOM_RELAY_LEASE": lambda: resolve_relay_options(None),
        "LOOM_POOL_SIZE": pool_settings,
        "LOOM_POOL_OVERFLOW": pool_settings,
        "LOOM_POOL_TIMEOUT": pool_settings,
    }[name]
    with pytest.raises(ValueError) as raised:
        resolve()
    assert says in str(raised.value)
