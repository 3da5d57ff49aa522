"""Which broker each channel source is on, read from the environment."""

from __future__ import annotations

import pytest

from loom.runtime.messaging.broker_config import broker_urls, variable_for
from loom.runtime.values.errors import StartupRefused


def test_each_source_reads_its_variable_in_either_spelling() -> None:
    env = {"LOOM_BROKER_BUS": "nats://127.0.0.1:4222", "LOOM_BROKER_Cache": "redis://x:6379/0"}
    assert broker_urls(env, ["Bus", "Cache", "Other"]) == {
        "Bus": "nats://127.0.0.1:4222",
        "Cache": "redis://x:6379/0",
    }


def test_the_default_broker_is_the_bare_variable() -> None:
    assert broker_urls({"LOOM_BROKER": " nats://h:1 "}, ["", "Bus"]) == {"": "nats://h:1"}
    assert variable_for("") == "LOOM_BROKER"
    assert variable_for("Bus") == "LOOM_BROKER_BUS"


def test_an_empty_variable_configures_nothing() -> None:
    assert broker_urls({"LOOM_BROKER_BUS": "  ", "LOOM_BROKER": ""}, ["Bus", ""]) == {}


def test_two_spellings_with_two_urls_are_refused() -> None:
    env = {"LOOM_BROKER_Bus": "nats://a:1", "LOOM_BROKER_BUS": "nats://b:1"}
    with pytest.raises(StartupRefused, match="LOOM_BROKER_BUS and LOOM_BROKER_Bus"):
        broker_urls(env, ["Bus"])
    same = {"LOOM_BROKER_Bus": "nats://a:1", "LOOM_BROKER_BUS": "nats://a:1"}
    assert broker_urls(same, ["Bus"]) == {"Bus": "nats://a:1"}
